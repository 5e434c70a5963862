package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// imageName and imageTag are what the overlays' `images:` set: the one
// place the image is chosen (docs/deploy.md). The tag is a placeholder
// that `kustomize edit set image` replaces before an apply.
const (
	imageName = "ghcr.io/almoner/almoner"
	imageTag  = "set-by-kustomize-edit"
)

// TestImageIsSetOnce: every container and init container of every render
// runs the overlay's image, set by its kustomization's `images:` only: the
// base names it `almoner` without a tag, and nothing says latest.
func TestImageIsSetOnce(t *testing.T) {
	base, err := os.ReadFile("k8s/base/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(base), "\nimages:") || strings.Contains(string(base), "latest") {
		t.Errorf("k8s/base/kustomization.yaml sets an image: only the overlays do")
	}
	for _, dir := range renders {
		for _, o := range renderDir(t, dir) {
			for _, img := range images(o) {
				if sidecarImage(img) {
					continue
				}
				if img != imageName+":"+imageTag {
					t.Errorf("%s: %s %v runs %s, want the overlay's %s:%s", dir, o["kind"], o["metadata"].(map[string]any)["name"], img, imageName, imageTag)
				}
			}
		}
	}
}

// sidecarImage reports whether img is a pinned image of another program
// than Almoner (the pgbouncer component's own image, deploy/pgbouncer):
// those keep their own version tag, never latest.
func sidecarImage(img string) bool {
	name, tag, ok := strings.Cut(img, ":")
	return ok && name != imageName && !strings.HasSuffix(name, "/almoner") && tag != "" && tag != "latest"
}

// images lists the images of an object's pod template, if it has one.
func images(o map[string]any) []string {
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	var out []string
	for _, key := range []string{"initContainers", "containers"} {
		cs, _ := pod[key].([]any)
		for _, c := range cs {
			out = append(out, c.(map[string]any)["image"].(string))
		}
	}
	return out
}

// TestMigrateJobFollowsTheImage: the Job's name carries the image tag, so
// `kustomize edit set image` to a new version makes a new Job (a Job's pod
// template is immutable: applying a new image to the old name is refused).
func TestMigrateJobFollowsTheImage(t *testing.T) {
	fs := filesys.MakeFsInMemory()
	if err := copyTree(fs, "k8s"); err != nil {
		t.Fatal(err)
	}
	// What `kustomize edit set image almoner=…:4f2c9a1` writes.
	k := "k8s/overlays/production/kustomization.yaml"
	var kust types.Kustomization
	b, _ := fs.ReadFile(k)
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatal(err)
	}
	kust.Images[0].NewTag = "4f2c9a1"
	out, err := yaml.Marshal(kust)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.WriteFile(k, out); err != nil {
		t.Fatal(err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "k8s/overlays/production")
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for _, r := range res.Resources() {
		if r.GetKind() != "Job" {
			continue
		}
		jobs++
		m, _ := r.Map()
		var j batchv1.Job
		strict(t, m, &j)
		if j.Name != "almoner-migrate-4f2c9a1" || j.Spec.Template.Spec.Containers[0].Image != imageName+":4f2c9a1" {
			t.Errorf("Job %s runs %s, want almoner-migrate-4f2c9a1 running %s:4f2c9a1", j.Name, j.Spec.Template.Spec.Containers[0].Image, imageName)
		}
	}
	if jobs != 1 {
		t.Errorf("%d Jobs", jobs)
	}
}

// copyTree copies the files under dir on disk into fs.
func copyTree(fs filesys.FileSystem, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if err := copyTree(fs, p); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := fs.WriteFile(p, b); err != nil {
			return err
		}
	}
	return nil
}

// TestAutoscaledDeploymentsHaveNoReplicas: a Deployment an HPA scales sets
// no spec.replicas, in the base or an overlay, so re-applying the manifests
// never resets the count the HPA chose; and the gateway has a startup
// probe, so a slow start is not killed by its liveness probe.
func TestAutoscaledDeploymentsHaveNoReplicas(t *testing.T) {
	for _, dir := range renders {
		objs := renderDir(t, dir)
		scaled := map[string]bool{}
		for _, o := range objs {
			if o["kind"] == "HorizontalPodAutoscaler" {
				var h autoscalingv2.HorizontalPodAutoscaler
				strict(t, o, &h)
				scaled[h.Spec.ScaleTargetRef.Name] = true
			}
		}
		if !scaled["almoner-gateway"] {
			t.Errorf("%s: no HPA scales the gateway", dir)
		}
		for _, o := range objs {
			if o["kind"] != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			strict(t, o, &d)
			if scaled[d.Name] && d.Spec.Replicas != nil {
				t.Errorf("%s: %s sets replicas: %d, and an HPA scales it", dir, d.Name, *d.Spec.Replicas)
			}
			if d.Name == "almoner-gateway" {
				if p := d.Spec.Template.Spec.Containers[0].StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
					t.Errorf("%s: the gateway has no /healthz startup probe", dir)
				}
			}
		}
	}
}

// gatewayMaxBody is the gateway's JSON body limit (gateway.DefaultMaxBodyBytes)
// and importsMaxBytes the import upload's (ALMONER_IMPORTS_MAX_BYTES'
// default): the Ingress example refuses larger bodies at the edge.
const (
	gatewayMaxBody  = 1 << 20
	importsMaxBytes = 1 << 30
)

// TestIngressExample: TLS on every host, the gateway's Service as the only
// backend, and body limits equal to the gateway's: 1 MiB, and 1 GiB on the
// import upload's path only.
func TestIngressExample(t *testing.T) {
	ingresses := 0
	for _, o := range renderDir(t, "examples/ingress") {
		if o["kind"] != "Ingress" {
			continue
		}
		ingresses++
		var ing networkingv1.Ingress
		strict(t, o, &ing)
		if len(ing.Spec.TLS) == 0 {
			t.Errorf("%s: no TLS", ing.Name)
		}
		tlsHosts := map[string]bool{}
		for _, tls := range ing.Spec.TLS {
			for _, h := range tls.Hosts {
				tlsHosts[h] = true
			}
		}
		imports := false
		for _, rule := range ing.Spec.Rules {
			if !tlsHosts[rule.Host] {
				t.Errorf("%s: host %s without TLS", ing.Name, rule.Host)
			}
			for _, p := range rule.HTTP.Paths {
				if p.Backend.Service == nil || p.Backend.Service.Name != "almoner-gateway" {
					t.Errorf("%s: path %s goes elsewhere than the gateway", ing.Name, p.Path)
				}
				if regexp.MustCompile(p.Path).MatchString("/api/tenants/0197a3c2-a164-7e85-8f70-5d6e7f8091a2/imports") && strings.Contains(p.Path, "imports") {
					imports = true
				}
			}
		}
		size, err := nginxSize(ing.Annotations["nginx.ingress.kubernetes.io/proxy-body-size"])
		if err != nil {
			t.Fatalf("%s: %v", ing.Name, err)
		}
		if want := int64(gatewayMaxBody); imports {
			want = importsMaxBytes
			if size != want || ing.Annotations["nginx.ingress.kubernetes.io/proxy-request-buffering"] != "off" {
				t.Errorf("%s: body size %d, want %d, streamed", ing.Name, size, want)
			}
		} else if size != want {
			t.Errorf("%s: body size %d, want the gateway's %d", ing.Name, size, want)
		}
	}
	if ingresses != 2 {
		t.Errorf("%d Ingresses, want the API's and the import upload's", ingresses)
	}
}

// nginxSize reads an nginx size (1m, 1g: binary units).
func nginxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(strings.ToUpper(strings.TrimSpace(s)[:len(s)-1]) + map[byte]string{'k': "Ki", 'm': "Mi", 'g': "Gi"}[s[len(s)-1]])
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}
