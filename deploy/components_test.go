package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// renderPath renders the kustomization at path (relative to deploy/).
func renderPath(t *testing.T, path string) []map[string]any {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", path, err)
	}
	var out []map[string]any
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// envOf returns a container's variables by name.
func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		if _, dup := out[e.Name]; dup {
			out[e.Name+"#dup"] = e
		}
		out[e.Name] = e
	}
	return out
}

func secretKey(e corev1.EnvVar) string {
	if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "almoner-database" {
		return ""
	}
	return e.ValueFrom.SecretKeyRef.Key
}

// TestScalingComponents renders production with components/pgbouncer and
// components/read-replica (k8s/examples/scaled): every service reaches
// PostgreSQL through PgBouncer in transaction mode with the server as its
// direct URL and the standby as its read URL, the migrate Job stays at the
// server, and PgBouncer runs in transaction mode as locked down as the
// services' pods.
func TestScalingComponents(t *testing.T) {
	objs := renderPath(t, "k8s/examples/scaled")
	var pooler bool
	for _, o := range objs {
		name := o["metadata"].(map[string]any)["name"].(string)
		switch o["kind"] {
		case "Deployment":
			var d appsv1.Deployment
			strict(t, o, &d)
			if name == "almoner-pgbouncer" {
				pooler = true
				checkPooler(t, d.Spec.Template.Spec)
				continue
			}
			if name == "almoner-gateway" {
				continue
			}
			env := envOf(d.Spec.Template.Spec.Containers[0])
			for v, want := range map[string]string{"DATABASE_URL": "pooler-url", "ALMONER_DIRECT_DATABASE_URL": "url", "ALMONER_READ_DATABASE_URL": "read-url"} {
				if got := secretKey(env[v]); got != want {
					t.Errorf("%s: %s from key %q of almoner-database, want %q", name, v, got, want)
				}
			}
			if env["ALMONER_DATABASE_POOL_MODE"].Value != "transaction" || env["ALMONER_READ_MAX_LAG"].Value == "" {
				t.Errorf("%s: pool mode %q, read max lag %q", name, env["ALMONER_DATABASE_POOL_MODE"].Value, env["ALMONER_READ_MAX_LAG"].Value)
			}
			if _, dup := env["DATABASE_URL#dup"]; dup {
				t.Errorf("%s: DATABASE_URL twice", name)
			}
		case "Job":
			var j batchv1.Job
			strict(t, o, &j)
			if got := secretKey(envOf(j.Spec.Template.Spec.Containers[0])["DATABASE_URL"]); got != "url" {
				t.Errorf("%s: migrations' DATABASE_URL from key %q, want the server's (url)", name, got)
			}
		case "ConfigMap":
			var cm corev1.ConfigMap
			strict(t, o, &cm)
			if name == "almoner-pgbouncer" && !containsLine(cm.Data["pgbouncer.ini"], "pool_mode = transaction") {
				t.Errorf("pgbouncer.ini is not in transaction mode:\n%s", cm.Data["pgbouncer.ini"])
			}
		}
	}
	if !pooler {
		t.Error("no almoner-pgbouncer Deployment")
	}
}

// TestServiceAutoscalers: the services that scale with load have an HPA
// on their Deployment in every overlay.
func TestServiceAutoscalers(t *testing.T) {
	for _, overlay := range []string{"sandbox", "production"} {
		var targets []string
		for _, o := range render(t, overlay) {
			if o["kind"] != "HorizontalPodAutoscaler" {
				continue
			}
			var h autoscalingv2.HorizontalPodAutoscaler
			strict(t, o, &h)
			if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != h.Name || h.Spec.MaxReplicas <= *h.Spec.MinReplicas {
				t.Errorf("%s: HPA %s targets %v, %d..%d", overlay, h.Name, h.Spec.ScaleTargetRef, *h.Spec.MinReplicas, h.Spec.MaxReplicas)
			}
			targets = append(targets, h.Name)
		}
		for _, s := range []string{"gateway", "orders", "contacts", "reports", "webhooks"} {
			if !slices.Contains(targets, "almoner-"+s) {
				t.Errorf("%s: no HPA for almoner-%s", overlay, s)
			}
		}
	}
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

// checkPooler holds PgBouncer's pod to the services' lock-down (checkPod
// without the database and key variables, which it has none of).
func checkPooler(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pgbouncer: pod does not run as a non-root user")
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("pgbouncer/%s: container security context is not locked down", c.Name)
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("pgbouncer/%s: missing resources or probes", c.Name)
		}
	}
}
