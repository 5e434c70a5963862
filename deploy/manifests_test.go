// Package deploy holds the deployment files; its test renders every
// kustomize overlay and checks the objects against the Kubernetes API types.
package deploy

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var services = []string{"auth", "contacts", "imports", "inventory", "orders", "reports", "webhooks"}

// strict decodes one object into its API type, failing on unknown fields.
func strict(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Errorf("%s %v: %v", obj["kind"], obj["metadata"].(map[string]any)["name"], err)
	}
}

func render(t *testing.T, overlay string) []map[string]any {
	t.Helper()
	return renderDir(t, "overlays/"+overlay)
}

// renderDir is `kustomize build k8s/<dir>` with kustomize's own library.
func renderDir(t *testing.T, dir string) []map[string]any {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), "k8s/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
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

func checkPod(t *testing.T, what string, spec corev1.PodSpec, needProbes bool) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod does not run as a non-root user", what)
	}
	for _, c := range spec.Containers {
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() ||
			c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s/%s: missing resource requests or limits", what, c.Name)
		}
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			(sc.RunAsUser != nil && *sc.RunAsUser == 0) || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s/%s: container security context is not locked down", what, c.Name)
		}
		if needProbes && (c.ReadinessProbe == nil || c.LivenessProbe == nil) {
			t.Errorf("%s/%s: missing readiness or liveness probe", what, c.Name)
		}
		hasDB, hasSealingKey, hasInternalKey := false, false, false
		for _, e := range c.Env {
			if e.Name == "ALMONER_INTERNAL_KEY" {
				hasInternalKey = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
					e.ValueFrom.SecretKeyRef.Name == "almoner-internal-key" && e.ValueFrom.SecretKeyRef.Key == "key" && e.Value == ""
			}
			if e.Name == "DATABASE_URL" {
				hasDB = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Value == ""
			}
			if e.Name == "ALMONER_WEBHOOK_SECRET_KEY" {
				hasSealingKey = e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
					e.ValueFrom.SecretKeyRef.Name == "almoner-webhook-secret-key" && e.Value == ""
			}
		}
		// auth (processor keys) and webhooks (signing secrets) seal with
		// one key; a split process without it refuses to start.
		if (strings.HasSuffix(what, "-auth") || strings.HasSuffix(what, "-webhooks")) && !hasSealingKey {
			t.Errorf("%s/%s: ALMONER_WEBHOOK_SECRET_KEY does not come from the almoner-webhook-secret-key Secret", what, c.Name)
		}
		// Every serving process signs and verifies internal calls with one
		// key; without it a split process refuses to start. The migrate
		// Job serves nothing.
		if needProbes && !hasInternalKey {
			t.Errorf("%s/%s: ALMONER_INTERNAL_KEY does not come from the almoner-internal-key Secret", what, c.Name)
		}
		if strings.Contains(what, "gateway") {
			continue
		}
		if !hasDB {
			t.Errorf("%s/%s: DATABASE_URL does not come from a Secret", what, c.Name)
		}
	}
}

func TestOverlays(t *testing.T) {
	for _, overlay := range []string{"sandbox", "production"} {
		t.Run(overlay, func(t *testing.T) {
			objs := render(t, overlay)
			kinds := map[string][]string{}
			for _, o := range objs {
				kind := o["kind"].(string)
				meta := o["metadata"].(map[string]any)
				name := meta["name"].(string)
				if ns := meta["namespace"]; ns != "almoner-"+overlay {
					t.Errorf("%s %s in namespace %v", kind, name, ns)
				}
				kinds[kind] = append(kinds[kind], name)
				switch kind {
				case "Deployment":
					var d appsv1.Deployment
					strict(t, o, &d)
					checkPod(t, name, d.Spec.Template.Spec, true)
					if d.Spec.Template.Labels["app.kubernetes.io/part-of"] != "almoner" {
						t.Errorf("%s: pods lack the part-of label the NetworkPolicy admits", name)
					}
				case "Job":
					var j batchv1.Job
					strict(t, o, &j)
					checkPod(t, name, j.Spec.Template.Spec, false)
				case "Service":
					strict(t, o, &corev1.Service{})
				case "ConfigMap":
					var cm corev1.ConfigMap
					strict(t, o, &cm)
					if cm.Data["ALMONER_ENVIRONMENT"] != overlay {
						t.Errorf("ALMONER_ENVIRONMENT = %q", cm.Data["ALMONER_ENVIRONMENT"])
					}
				case "PodDisruptionBudget":
					strict(t, o, &policyv1.PodDisruptionBudget{})
				case "HorizontalPodAutoscaler":
					strict(t, o, &autoscalingv2.HorizontalPodAutoscaler{})
				case "NetworkPolicy":
					strict(t, o, &networkingv1.NetworkPolicy{})
				default:
					t.Errorf("unexpected kind %s", kind)
				}
			}
			for _, s := range append([]string{"gateway"}, services...) {
				name := "almoner-" + s
				for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
					if !slices.Contains(kinds[kind], name) {
						t.Errorf("no %s %s", kind, name)
					}
				}
			}
			for kind, want := range map[string]string{"HorizontalPodAutoscaler": "almoner-gateway", "Job": "almoner-migrate-" + imageTag} {
				if !slices.Contains(kinds[kind], want) {
					t.Errorf("no %s %s", kind, want)
				}
			}
			if len(kinds["NetworkPolicy"]) < 2 {
				t.Errorf("NetworkPolicies: %v", kinds["NetworkPolicy"])
			}
		})
	}
}

// TestOnlyTheGatewayIsExposed checks the NetworkPolicies: a default deny,
// and only the gateway's policy admits traffic from anywhere.
func TestOnlyTheGatewayIsExposed(t *testing.T) {
	for _, o := range render(t, "production") {
		if o["kind"] != "NetworkPolicy" {
			continue
		}
		var np networkingv1.NetworkPolicy
		strict(t, o, &np)
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				for _, p := range rule.Ports {
					// Anyone may reach the API and the metrics port
					// (which no Service routes to); services' gRPC only
					// Almoner's pods.
					if port := p.Port.IntValue(); port != 9464 && (port != 8080 || np.Name != "almoner-gateway-ingress") {
						t.Errorf("%s admits outside traffic to port %s", np.Name, p.Port.String())
					}
				}
			}
		}
	}
}

// TestMetricsOnTheirOwnPort: every Deployment, the gateway's included,
// serves /metrics on ALMONER_METRICS_ADDR=:9464, a container port named
// metrics that the scrape annotations name, and no Service exposes it:
// never the API port, where /metrics is a 404.
// spools are the Deployments whose process writes to the temporary
// directory, and why; with a read-only root filesystem each needs a
// writable volume at /tmp.
var spools = map[string]string{
	"almoner-reports": "tax-run ZIPs (services/reports/taxruns.go) and excelize's XLSX stream writer",
}

func TestSpoolingProcessesHaveAWritableTmp(t *testing.T) {
	for _, overlay := range []string{"sandbox", "production"} {
		seen := 0
		for _, o := range render(t, overlay) {
			if o["kind"] != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			strict(t, o, &d)
			why, ok := spools[d.Name]
			if !ok {
				continue
			}
			seen++
			spec := d.Spec.Template.Spec
			for _, c := range spec.Containers {
				if !writableTmp(spec, c) {
					t.Errorf("%s %s/%s: no writable volume at /tmp, and it spools %s there", overlay, d.Name, c.Name, why)
				}
			}
		}
		if seen != len(spools) {
			t.Errorf("%s: found %d of the %d spooling Deployments", overlay, seen, len(spools))
		}
	}
}

// writableTmp says whether c mounts a bounded emptyDir of spec at /tmp.
func writableTmp(spec corev1.PodSpec, c corev1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/tmp" || m.ReadOnly {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil && !v.EmptyDir.SizeLimit.IsZero() {
				return true
			}
		}
	}
	return false
}

func TestMetricsOnTheirOwnPort(t *testing.T) {
	deployments := 0
	for _, o := range render(t, "production") {
		switch o["kind"] {
		case "Deployment":
			deployments++
			var d appsv1.Deployment
			strict(t, o, &d)
			ann := d.Spec.Template.Annotations
			if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != "9464" ||
				(ann["prometheus.io/path"] != "" && ann["prometheus.io/path"] != "/metrics") {
				t.Errorf("%s: scrape annotations %v", d.Name, ann)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				addr := ""
				for _, e := range c.Env {
					if e.Name == "ALMONER_METRICS_ADDR" {
						addr = e.Value
					}
				}
				if addr != ":9464" {
					t.Errorf("%s/%s: ALMONER_METRICS_ADDR = %q, want :9464 (the default listens on loopback only)", d.Name, c.Name, addr)
				}
				if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 9464 }) {
					t.Errorf("%s/%s: no container port metrics 9464", d.Name, c.Name)
				}
			}
		case "Service":
			var s corev1.Service
			strict(t, o, &s)
			for _, p := range s.Spec.Ports {
				if p.Port == 9464 || p.TargetPort.String() == "metrics" || p.TargetPort.IntValue() == 9464 {
					t.Errorf("Service %s exposes the metrics port", s.Name)
				}
			}
		}
	}
	if deployments != 1+len(services) {
		t.Errorf("%d Deployments", deployments)
	}
}
