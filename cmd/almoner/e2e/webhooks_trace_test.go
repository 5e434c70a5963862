package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/traceid"
)

// TestWebhookDeliveryJoinsRequestTrace creates a contact under a known
// W3C trace and finds the webhook.deliver span of its contact.created
// delivery in that same trace, as a child of one of the request's spans;
// the receiver itself gets no trace context.
func TestWebhookDeliveryJoinsRequestTrace(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	hookID, _ := createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")

	id := traceid.New()
	apptest.WatchTrace(id)
	c.Do(t, "POST", "/api/tenants/"+tn.ID+"/contacts", tn.Key,
		map[string]any{"contactType": "Individual", "firstName": "Grace", "lastName": "Hopper"},
		"traceparent", "00-"+id+"-00f067aa0ba902b7-01").Expect(t, http.StatusCreated)
	got := rc.waitFor(t, 1)
	if h := got[0].header; h.Get("Traceparent") != "" || h.Get("Tracestate") != "" {
		t.Errorf("the receiver got trace context: %v", h)
	}

	// The span ends after the POST returns; give it a moment to be recorded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans := apptest.Spans(id)
		ids := map[string]bool{}
		for _, s := range spans {
			ids[s.SpanContext().SpanID().String()] = true
		}
		for _, s := range spans {
			if s.Name() != "webhook.deliver" {
				continue
			}
			if !ids[s.Parent().SpanID().String()] {
				t.Errorf("webhook.deliver's parent %s is not a span of the request's trace", s.Parent().SpanID())
			}
			attrs := map[string]string{}
			for _, a := range s.Attributes() {
				attrs[string(a.Key)] = a.Value.String()
			}
			if attrs["webhook.event"] != "contact.created" || attrs["webhook.endpoint_id"] != hookID || attrs["webhook.attempt"] != "1" ||
				attrs["webhook.success"] != "true" || attrs["http.response.status_code"] != "200" {
				t.Errorf("webhook.deliver attributes = %v", attrs)
			}
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name())
			}
			t.Fatalf("trace %s has no webhook.deliver span; spans: %v", id, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
