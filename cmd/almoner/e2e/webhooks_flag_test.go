package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
)

// TestWebhookFlagOffStopsAtOnce: once `tenant feature --set
// webhooks:enabled=false` has answered, a contact created at once is never
// delivered, however many ticks pass (the dispatcher's flag follows the
// auth service's validation epoch, not a TTL); turned on again, later
// events flow, and the one of the off period never does.
func TestWebhookFlagOffStopsAtOnce(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")
	contact := func(name string) string {
		t.Helper()
		m := c.Do(t, "POST", tPath(tn.ID, "/contacts"), tn.Key, map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Donor"}).
			Expect(t, http.StatusCreated).Map(t)
		return strconv.FormatInt(int64(m["id"].(float64)), 10)
	}
	setFlag := func(on bool) {
		t.Helper()
		if _, err := c.Admin.SetTenantFeature(context.Background(), &authv1.SetTenantFeatureRequest{TenantId: tn.ID, Feature: "webhooks:enabled", Enabled: on}); err != nil {
			t.Fatal(err)
		}
	}
	entityIDs := func() []string {
		var ids []string
		for _, r := range rc.requests() {
			var b struct {
				Data struct {
					EntityID string `json:"entity_id"`
				} `json:"data"`
			}
			if err := json.Unmarshal(r.body, &b); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.Data.EntityID)
		}
		return ids
	}

	first := contact("First")
	rc.waitFor(t, 1, 10*time.Second)

	setFlag(false)
	off := contact("Off")
	// Fifty ticks of 10 ms, and the dispatcher's flag cache of old (10 s)
	// would still have said "on".
	time.Sleep(500 * time.Millisecond)
	if ids := entityIDs(); len(ids) != 1 || ids[0] != first {
		t.Fatalf("with the flag off: delivered %v, want only %s", ids, first)
	}

	setFlag(true)
	on := contact("On")
	rc.waitFor(t, 2, 10*time.Second)
	time.Sleep(200 * time.Millisecond) // twenty ticks more: nothing else may come
	ids := entityIDs()
	if len(ids) != 2 || ids[1] != on {
		t.Errorf("after turning the flag on: delivered %v, want %s then %s (never %s)", ids, first, on, off)
	}
}
