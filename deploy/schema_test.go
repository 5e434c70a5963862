package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// renders are the kustomizations an operator applies: both overlays and
// the Ingress example on top of production. Every directory under
// k8s/overlays and k8s/examples must be listed (TestEveryKustomizationIsRendered).
var renders = []string{"overlays/sandbox", "overlays/production", "examples/ingress", "examples/scaled"}

// TestEveryObjectMatchesTheKubernetesSchema validates every object of
// every render against the schema of its kind as the Kubernetes API
// publishes it: client-go's (pinned in go.mod, so offline and the same on
// every machine), generated from the API server's OpenAPI document, which
// the API server's server-side apply checks with. An unknown field, a
// value of the wrong type (replicas: "2") or a list where an object is due
// fails; so does a kind the schema does not know: nothing is skipped.
func TestEveryObjectMatchesTheKubernetesSchema(t *testing.T) {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	for _, dir := range renders {
		t.Run(dir, func(t *testing.T) {
			objs := renderDir(t, dir)
			if len(objs) < 20 {
				t.Fatalf("only %d objects", len(objs))
			}
			for _, o := range objs {
				u := &unstructured.Unstructured{Object: o}
				if _, err := tc.ObjectToTyped(u, typed.AllowDuplicates); err != nil {
					t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
				}
			}
		})
	}
}

// TestTheSchemaCatchesMistakes: the validation fails on what it must
// (a test that cannot fail checks nothing).
func TestTheSchemaCatchesMistakes(t *testing.T) {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	objs := renderDir(t, "overlays/production")
	var deployment map[string]any
	for _, o := range objs {
		if o["kind"] == "Deployment" {
			deployment = o
			break
		}
	}
	for name, mutate := range map[string]func(map[string]any){
		"unknown field": func(o map[string]any) { o["spec"].(map[string]any)["replica"] = 2 },
		"wrong type":    func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = "2" },
		"unknown kind":  func(o map[string]any) { o["kind"] = "Deploymint" },
	} {
		o := deepCopy(deployment)
		mutate(o)
		if _, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: o}, typed.AllowDuplicates); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestEveryKustomizationIsRendered: a new overlay or example is validated
// too, once listed in renders.
func TestEveryKustomizationIsRendered(t *testing.T) {
	for _, parent := range []string{"overlays", "examples"} {
		entries, err := os.ReadDir(filepath.Join("k8s", parent))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			dir := parent + "/" + e.Name()
			if _, err := os.Stat(filepath.Join("k8s", dir, "kustomization.yaml")); err == nil && !slices.Contains(renders, dir) {
				t.Errorf("k8s/%s is not in renders", dir)
			}
		}
	}
}

func deepCopy(o map[string]any) map[string]any {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
