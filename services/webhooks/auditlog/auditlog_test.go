package auditlog

import (
	"testing"

	webhooksv1 "github.com/almoner/almoner/pkg/api/almoner/webhooks/v1"
)

// TestQuery: the filters and the cursor.
func TestQuery(t *testing.T) {
	n := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name string
		req  *webhooksv1.ListAuditLogsRequest
		ok   bool
	}{
		{"defaults", &webhooksv1.ListAuditLogsRequest{}, true},
		{"every filter", &webhooksv1.ListAuditLogsRequest{Actor: "user:u", ImpersonatorId: "operator:o", EntityType: "Contact", EntityId: "1",
			Action: "Updated", From: "2026-01-01", To: "2026-12-02T10:00:00Z", After: cursor(42), Limit: n(1000)}, true},
		{"limit 0", &webhooksv1.ListAuditLogsRequest{Limit: n(0)}, false},
		{"limit 1001", &webhooksv1.ListAuditLogsRequest{Limit: n(1001)}, false},
		{"action", &webhooksv1.ListAuditLogsRequest{Action: "created"}, false},
		{"entity id alone", &webhooksv1.ListAuditLogsRequest{EntityId: "1"}, false},
		{"from", &webhooksv1.ListAuditLogsRequest{From: "last week"}, false},
		{"cursor", &webhooksv1.ListAuditLogsRequest{After: "bm9wZQ"}, false},
	} {
		lq, err := query(tc.req)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.name == "every filter" && (lq.BeforeSeq != 42 || lq.From == nil || lq.To == nil || lq.Limit != 1000) {
			t.Errorf("query %+v", lq)
		}
	}
}
