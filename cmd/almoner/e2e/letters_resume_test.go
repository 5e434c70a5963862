package e2e

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// TestLetterRunResumesAfterKill makes a PDF run of 201 gifts in a reports
// process of its own (batches of 5, a 2 s lease), kills it with SIGKILL
// mid-run, starts two more, and checks the run succeeds with one letter
// and one acknowledgement per gift: none lost, none made twice.
func TestLetterRunResumesAfterKill(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_LETTER_RUNNER": "false"}})
	f := newOrderFixture(t, c)
	tn := f.tn
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	model := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, f.cashOrder(10)).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	loadDonors(t, c, tn.ID, model, 200)

	env := []string{"DATABASE_URL=" + c.DatabaseURL, "ALMONER_AUTH_ADDR=" + c.ServiceAddr("auth"), "ALMONER_ORDERS_ADDR=" + c.ServiceAddr("orders"),
		"ALMONER_METRICS_ADDR=off", "ALMONER_HTTP_ADDR=", "ALMONER_TAX_RUNNER=false", "ALMONER_LETTER_RUNNER=true",
		"ALMONER_LETTER_RUN_BATCH=5", "ALMONER_LETTER_RUN_LEASE=2s"}
	for k, v := range c.Settings {
		if k != "ALMONER_LETTER_RUNNER" {
			env = append(env, k+"="+v)
		}
	}
	start := func() *apptest.Child {
		return apptest.StartChild(t, "reports", append(env, "ALMONER_GRPC_ADDR=127.0.0.1:0")...)
	}
	tmpl := tPath(tn.ID, "/document-templates/") + c.Do(t, "POST", tPath(tn.ID, "/document-templates"), tn.Key, map[string]any{"kind": "acknowledgement",
		"name": "Resume", "subject": "Thanks", "body": "Thank you, {{contact.firstName}}, for {{gift.amount}}."}).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	today := time.Now().In(mustLoc(t, "America/New_York")).Format(time.DateOnly)
	id := c.Do(t, "POST", tPath(tn.ID, "/letter-runs"), tn.Key, map[string]any{"templateId": tmpl[strings.LastIndex(tmpl, "/")+1:], "channel": "pdf",
		"markAcknowledged": true, "filter": map[string]any{"from": today, "to": today}}).Expect(t, http.StatusAccepted).Map(t)["id"].(string)
	poll := func(done func(map[string]any) bool) map[string]any {
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			run := c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
			if done(run) || time.Now().After(deadline) {
				return run
			}
		}
	}
	c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", id, "/document"), tn.Key, nil).Expect(t, http.StatusConflict)
	// The queued run's template cannot be deleted until the run is done.
	c.Do(t, "DELETE", tmpl, tn.Key, nil).Expect(t, http.StatusBadRequest)
	victim := start()
	run := poll(func(r map[string]any) bool { n, _ := r["letters"].(float64); return n >= 30 })
	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if run["status"] != "running" {
		t.Fatalf("before the kill: %v (the run must still be going for the test to mean anything)", run)
	}
	start()
	start()
	run = poll(func(r map[string]any) bool { return r["status"] == "succeeded" || r["status"] == "failed" })
	if run["status"] != "succeeded" || run["letters"] != float64(201) || run["skipped"] != float64(0) {
		t.Fatalf("after the kill: %v", run)
	}
	c.Do(t, "DELETE", tmpl, tn.Key, nil).Expect(t, http.StatusNoContent)
	conn, err := pgx.Connect(context.Background(), c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var acks, gifts int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT entity_id) FROM audit.events WHERE tenant_id = $1
		AND entity_type = 'Order' AND action = 'Updated' AND changes ? 'acknowledgementStatus'`, tn.ID).Scan(&acks, &gifts); err != nil {
		t.Fatal(err)
	}
	if acks != 201 || gifts != 201 {
		t.Errorf("%d acknowledgements of %d gifts, want 201 of 201", acks, gifts)
	}
}
