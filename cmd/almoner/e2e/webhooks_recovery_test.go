package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/audit"
)

// deliveryPage is the deliveries list.
type deliveryPage struct {
	Items      []map[string]any `json:"items"`
	TotalCount int              `json:"totalCount"`
}

// deliveries reads the first page (100) of an endpoint's delivery records
// with query.
func deliveries(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id, query string) deliveryPage {
	t.Helper()
	var p deliveryPage
	c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries?pageSize=100&"+query), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
	return p
}

// waitDeliveries polls the list with query until it counts n records.
func waitDeliveries(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id, query string, n int) deliveryPage {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
	for {
		p := deliveries(t, c, tn, id, query)
		if p.TotalCount >= n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries?%s: %d records, want %d", query, p.TotalCount, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// switchable answers 500 until up is set, then 200.
func switchable(up *atomic.Bool) func(int, *http.Request) int {
	return func(int, *http.Request) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusInternalServerError
	}
}

// TestWebhookRedeliver: an event abandoned after five failures is sent
// again, as a new delivery, to the receiver that now answers 200; the
// delivery detail shows the attempts; the list filters by success and
// event type; a successful delivery can be sent again too.
func TestWebhookRedeliver(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rc := newReceiver(t, switchable(&up))
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc), "ALMONER_WEBHOOK_RETRY_BASE", "20ms")})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	other := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	id, secret := createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "42", Action: audit.Created, Actor: "system"})

	// Five failed attempts, the last abandoned; newest first.
	failed := waitDeliveries(t, c, tn, id, "success=false", 5)
	if failed.Items[0]["abandoned"] != true || failed.Items[0]["attemptNumber"] != float64(5) {
		t.Fatalf("newest failed attempt = %v", failed.Items[0])
	}
	first := rc.requests()[0]
	abandonedID := failed.Items[0]["deliveryId"].(string)
	for _, it := range failed.Items {
		if it["deliveryId"] != abandonedID {
			t.Errorf("attempt of another delivery: %v", it)
		}
	}
	// Filters.
	for _, q := range []struct {
		query string
		n     int
	}{{"success=true", 0}, {"eventTypes=contact.created", 5}, {"eventTypes=order.created,contact.updated", 0}, {"success=false&eventTypes=contact.created", 5}} {
		if p := deliveries(t, c, tn, id, q.query); p.TotalCount != q.n || len(p.Items) != q.n {
			t.Errorf("deliveries?%s: %d (%d items), want %d", q.query, p.TotalCount, len(p.Items), q.n)
		}
	}
	for _, bad := range []struct{ query, field string }{{"success=maybe", "Success"}, {"eventTypes=contact.exploded", "EventTypes[0]"}} {
		var p invProblem
		c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries?"+bad.query), tn.Key, nil).Expect(t, http.StatusBadRequest).JSON(t, &p)
		if len(p.Errors[bad.field]) == 0 {
			t.Errorf("%s: errors %v, want %s", bad.query, p.Errors, bad.field)
		}
	}

	// The detail, by the delivery's id and by an attempt's.
	detail := c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries/", abandonedID), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	atts, _ := detail["attempts"].([]any)
	if detail["state"] != "abandoned" || detail["id"] != abandonedID || len(atts) != 5 || detail["nextAttemptAt"] != nil || detail["redeliveryOf"] != nil {
		t.Fatalf("detail = %v", detail)
	}
	for i, a := range atts {
		if m := a.(map[string]any); m["attemptNumber"] != float64(i+1) || m["success"] != false || m["statusCode"] != float64(500) || m["error"] != "HTTP 500" {
			t.Errorf("attempt %d = %v", i+1, m)
		}
	}
	byAttempt := c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries/", failed.Items[2]["id"].(string)), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if byAttempt["id"] != abandonedID {
		t.Errorf("detail by attempt id = %v", byAttempt["id"])
	}

	// Redeliver to the receiver, now up: 202, a new delivery of the same event.
	up.Store(true)
	before := len(rc.requests())
	re := c.Do(t, "POST", whPath(tn.ID, "/", id, "/deliveries/", abandonedID, "/redeliver"), tn.Key, nil).Expect(t, http.StatusAccepted).Map(t)
	if re["id"] == abandonedID || re["eventId"] != detail["eventId"] || re["redeliveryOf"] != abandonedID || re["state"] != "pending" || fmt.Sprint(re["attempts"]) != "[]" {
		t.Fatalf("redeliver = %v", re)
	}
	got := rc.waitFor(t, before+1)[before]
	checkSigned(t, got, secret, "contact.created")
	if string(got.body) != string(first.body) || got.header.Get("X-Webhook-Delivery-Id") == first.header.Get("X-Webhook-Delivery-Id") {
		t.Errorf("redelivered body %s (first %s), delivery ids %s / %s", got.body, first.body,
			got.header.Get("X-Webhook-Delivery-Id"), first.header.Get("X-Webhook-Delivery-Id"))
	}
	newID := re["id"].(string)
	ok := waitDeliveries(t, c, tn, id, "success=true", 1)
	if ok.Items[0]["deliveryId"] != newID {
		t.Errorf("the successful attempt belongs to %v, want %s", ok.Items[0]["deliveryId"], newID)
	}
	if d := c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries/", newID), tn.Key, nil).Expect(t, http.StatusOK).Map(t); d["state"] != "succeeded" {
		t.Errorf("redelivery detail = %v", d)
	}
	// A successful delivery can be sent again too.
	c.Do(t, "POST", whPath(tn.ID, "/", id, "/deliveries/", newID, "/redeliver"), tn.Key, nil).Expect(t, http.StatusAccepted)
	waitDeliveries(t, c, tn, id, "success=true", 2)

	// Scopes, and what does not resolve.
	viewer := c.NewKey(t, tn.ID, "webhooks:view")
	nobody := c.NewKey(t, tn.ID, "events:view")
	if r := c.Do(t, "POST", whPath(tn.ID, "/", id, "/deliveries/", newID, "/redeliver"), viewer, nil).Expect(t, http.StatusForbidden); !strings.Contains(string(r.Body), "Missing required permission: webhooks:manage") {
		t.Errorf("redeliver with view: %s", r.Body)
	}
	c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries/", newID), viewer, nil).Expect(t, http.StatusOK)
	if r := c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries/", newID), nobody, nil).Expect(t, http.StatusForbidden); !strings.Contains(string(r.Body), "Missing required permission: webhooks:view") {
		t.Errorf("detail without view: %s", r.Body)
	}
	otherHook, _ := createWebhook(t, c, tn, rc.srv.URL+"/other", "contact.updated")
	test := c.Do(t, "POST", whPath(tn.ID, "/", id, "/test"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	for _, path := range []string{
		whPath(tn.ID, "/", otherHook, "/deliveries/", newID),            // another endpoint's delivery
		whPath(tn.ID, "/", id, "/deliveries/", test["id"].(string)),     // a test event has no delivery
		whPath(tn.ID, "/", id, "/deliveries/0190a4d6-0000-7000-8000-0"), // does not parse
		whPath(tn.ID, "/", id, "/deliveries/0190a4d6-0000-7000-8000-000000000000"),
		whPath(tn.ID, "/0190a4d6-0000-7000-8000-000000000000/deliveries/", newID),
	} {
		c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusNotFound)
		c.Do(t, "POST", path+"/redeliver", tn.Key, nil).Expect(t, http.StatusNotFound)
	}
	// Another tenant: its own key gets 404 for this endpoint, this key for its path.
	c.Do(t, "GET", whPath(other.ID, "/", id, "/deliveries/", newID), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", whPath(other.ID, "/", id, "/deliveries/", newID, "/redeliver"), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", whPath(other.ID, "/", id, "/deliveries/", newID), tn.Key, nil).Expect(t, http.StatusNotFound)
}

// TestWebhookReplay: events abandoned while the receiver was down are
// replayed once it is up, each once; the window, its event types and its
// size are checked.
func TestWebhookReplay(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rc := newReceiver(t, switchable(&up))
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc), "ALMONER_WEBHOOK_RETRY_BASE", "20ms")})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	id, secret := createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created", "contact.updated")
	since := time.Now().UTC().Add(-time.Second)
	for i := range 5 {
		writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: fmt.Sprint(i), Action: audit.Created, Actor: "system"})
	}
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "0", Action: audit.Updated, Actor: "system",
		Changes: map[string]audit.Change{"firstName": {Old: "a", New: "b"}}})
	// Down: every event abandoned after 5 attempts.
	waitDeliveries(t, c, tn, id, "success=false", 30)
	time.Sleep(100 * time.Millisecond)
	up.Store(true)
	before := len(rc.requests())

	r := c.Do(t, "POST", whPath(tn.ID, "/", id, "/replay"), tn.Key, map[string]any{
		"since": since.Format(time.RFC3339Nano), "eventTypes": []string{"contact.created"}}).Expect(t, http.StatusAccepted).Map(t)
	if r["enqueued"] != float64(5) {
		t.Fatalf("replay = %v", r)
	}
	got := rc.waitFor(t, before+5)[before:]
	var entities []string
	for _, g := range got {
		b := checkSigned(t, g, secret, "contact.created")
		entities = append(entities, b["data"].(map[string]any)["entity_id"].(string))
	}
	slices.Sort(entities)
	if strings.Join(entities, ",") != "0,1,2,3,4" {
		t.Errorf("replayed entities %v", entities)
	}
	// Queued in commit order: the deliveries are due in that order. Seen
	// on an inactive endpoint, whose deliveries stay as queued: the
	// dispatcher rewrites next_attempt_at of those it sends (the claim's
	// lease, one for all it claims at once, then the outcome's), so
	// after the sends above their order says nothing.
	held, _ := createWebhook(t, c, tn, rc.srv.URL+"/held", "contact.created")
	c.Do(t, "PUT", whPath(tn.ID, "/", held), tn.Key, map[string]any{"name": "held", "url": rc.srv.URL + "/held", "eventTypes": []string{"contact.created"}, "active": false}).Expect(t, http.StatusOK)
	r = c.Do(t, "POST", whPath(tn.ID, "/", held, "/replay"), tn.Key, map[string]any{"since": since.Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted).Map(t)
	if r["enqueued"] != float64(5) {
		t.Fatalf("replay to the inactive endpoint = %v", r)
	}
	var inOrder bool
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `
		SELECT array_agg(a.id ORDER BY d.next_attempt_at) = array_agg(a.id ORDER BY a.xid, a.id) AND count(DISTINCT d.next_attempt_at) = 5
		FROM webhooks.deliveries d JOIN audit.events a ON a.event_id = d.event_id
		WHERE d.tenant_id = $1 AND d.endpoint_id = $2 AND d.kind = 'replay' AND d.attempts = 0`, tn.ID, held).Scan(&inOrder); err != nil || !inOrder {
		t.Errorf("replay deliveries due in commit order: %v, %v", inOrder, err)
	}
	// The whole window, every type of the endpoint; until excludes.
	r = c.Do(t, "POST", whPath(tn.ID, "/", id, "/replay"), tn.Key, map[string]any{"since": since.Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted).Map(t)
	if r["enqueued"] != float64(6) {
		t.Errorf("replay of every type = %v", r)
	}
	r = c.Do(t, "POST", whPath(tn.ID, "/", id, "/replay"), tn.Key, map[string]any{"since": since.Add(-time.Hour).Format(time.RFC3339), "until": since.Format(time.RFC3339Nano)}).Expect(t, http.StatusAccepted).Map(t)
	if r["enqueued"] != float64(0) {
		t.Errorf("replay of an empty window = %v", r)
	}
	rc.waitFor(t, before+11)

	// Bad windows.
	for _, bc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"eventTypes": []string{"contact.created"}}, "Since"},
		{map[string]any{"since": since.Format(time.RFC3339), "until": since.Add(-time.Minute).Format(time.RFC3339)}, "Until"},
		{map[string]any{"since": since.Format(time.RFC3339), "eventTypes": []string{"order.created"}}, "EventTypes[0]"},
		{map[string]any{"since": "yesterday"}, "Since"},
		{map[string]any{"since": since.Format(time.RFC3339), "colour": "red"}, "Colour"},
	} {
		var p invProblem
		c.Do(t, "POST", whPath(tn.ID, "/", id, "/replay"), tn.Key, bc.body).Expect(t, http.StatusBadRequest).JSON(t, &p)
		if len(p.Errors[bc.field]) == 0 {
			t.Errorf("%v: errors %v, want %s", bc.body, p.Errors, bc.field)
		}
	}

	// More than 10,000 events: 400 with the count. On an inactive
	// endpoint, so the dispatcher does not send them meanwhile.
	big, _ := createWebhook(t, c, tn, rc.srv.URL+"/big", "fund.created")
	c.Do(t, "PUT", whPath(tn.ID, "/", big), tn.Key, map[string]any{"name": "big", "url": rc.srv.URL + "/big", "eventTypes": []string{"fund.created"}, "active": false}).Expect(t, http.StatusOK)
	if _, err := dbConn(t, c.DatabaseURL).Exec(context.Background(), `INSERT INTO audit.events (tenant_id, event_id, entity_type, entity_id, action, event, actor)
		SELECT $1, gen_random_uuid(), 'Fund', i::text, 'Created', 'fund.created', 'system' FROM generate_series(1, 10001) i`, tn.ID); err != nil {
		t.Fatal(err)
	}
	var p invProblem
	c.Do(t, "POST", whPath(tn.ID, "/", big, "/replay"), tn.Key, map[string]any{"since": since.Format(time.RFC3339Nano)}).Expect(t, http.StatusBadRequest).JSON(t, &p)
	if len(p.Errors[""]) != 1 || !strings.HasPrefix(p.Errors[""][0], "Webhook.ReplayTooLarge: The window holds 10001 matching events, 1 more than the 10000") {
		t.Errorf("too large: %v", p.Errors)
	}

	// The cap across calls: with 10,000 replayed deliveries already
	// pending (queued here as earlier replays to the inactive endpoint
	// would have), another replay and a redelivery are 409s that queue
	// nothing.
	if _, err := dbConn(t, c.DatabaseURL).Exec(context.Background(), `INSERT INTO webhooks.deliveries (tenant_id, id, endpoint_id, event_id, event, body, occurred_at, kind)
		SELECT $1, gen_random_uuid(), $2, gen_random_uuid(), 'fund.created', '{}', now(), 'replay' FROM generate_series(1, 10000)`, tn.ID, big); err != nil {
		t.Fatal(err)
	}
	var heldDelivery string
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT id::text FROM webhooks.deliveries WHERE endpoint_id = $1 LIMIT 1`, held).Scan(&heldDelivery); err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct{ path, body string }{
		{whPath(tn.ID, "/", held, "/replay"), `{"since":"` + since.Format(time.RFC3339Nano) + `"}`},
		{whPath(tn.ID, "/", held, "/deliveries/", heldDelivery, "/redeliver"), `{}`},
	} {
		var p invProblem
		c.Do(t, "POST", call.path, tn.Key, call.body).Expect(t, http.StatusConflict).JSON(t, &p)
		if len(p.Errors[""]) != 1 || !strings.HasPrefix(p.Errors[""][0], "Webhook.RecoveryBacklog: The tenant has ") {
			t.Errorf("%s past the backlog cap: %v", call.path, p.Errors)
		}
	}
	var heldQueued int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM webhooks.deliveries WHERE endpoint_id = $1`, held).Scan(&heldQueued); err != nil || heldQueued != 5 {
		t.Errorf("the held endpoint has %d deliveries after the refusals, want 5 (%v)", heldQueued, err)
	}

	// Scope and another tenant.
	viewer := c.NewKey(t, tn.ID, "webhooks:view")
	c.Do(t, "POST", whPath(tn.ID, "/", id, "/replay"), viewer, map[string]any{"since": since.Format(time.RFC3339)}).Expect(t, http.StatusForbidden)
	other := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	c.Do(t, "POST", whPath(other.ID, "/", id, "/replay"), other.Key, map[string]any{"since": since.Format(time.RFC3339)}).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", whPath(other.ID, "/", id, "/replay"), tn.Key, map[string]any{"since": since.Format(time.RFC3339)}).Expect(t, http.StatusNotFound)
	// Without webhooks:enabled: 403, as the test event.
	plain := c.NewTenant(t)
	pid, _ := createWebhook(t, c, plain, rc.srv.URL+"/plain", "contact.created")
	c.Do(t, "POST", whPath(plain.ID, "/", pid, "/replay"), plain.Key, map[string]any{"since": since.Format(time.RFC3339)}).Expect(t, http.StatusForbidden)
}

// TestWebhookAutoDisable: an endpoint whose attempts have all failed for
// 5 days is switched off by the dispatcher, with disabledReason and a
// webhook_endpoint.updated event; events written meanwhile are not lost:
// switched back on with a PUT, it delivers them. The 5 days are made by
// moving the attempts (and the endpoint's switch-on time) 6 days back, the
// clock every process of the cluster reads (unit test TestAutoDisable
// moves the dispatcher's own clock instead).
func TestWebhookAutoDisable(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	rc := newReceiver(t, switchable(&up))
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc), "ALMONER_WEBHOOK_RETRY_BASE", "20ms")})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	id, secret := createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created")
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "1", Action: audit.Created, Actor: "system"})
	waitDeliveries(t, c, tn, id, "success=false", 5)
	conn := dbConn(t, c.DatabaseURL)
	if _, err := conn.Exec(context.Background(), `UPDATE webhooks.attempts SET attempted_at = attempted_at - interval '6 days' WHERE endpoint_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), `UPDATE webhooks.endpoints SET active_since = active_since - interval '7 days' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}

	// Switched off by itself, within the dispatcher's check interval.
	var hook map[string]any
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var list []map[string]any
		c.Do(t, "GET", whPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
		if hook = list[0]; hook["active"] == false {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("endpoint still on: %v", hook)
		}
	}
	if r, _ := hook["disabledReason"].(string); !strings.Contains(r, "every delivery attempt has failed since") {
		t.Errorf("disabledReason = %v", hook["disabledReason"])
	}
	// The feed shows it once the audit horizon has passed its transaction.
	ev := readFeed(t, c, tn, "types=webhook_endpoint.updated&entityType=WebhookEndpoint&entityId="+id)
	for deadline := time.Now().Add(deliveryWait); len(ev.Items) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		ev = readFeed(t, c, tn, "types=webhook_endpoint.updated&entityType=WebhookEndpoint&entityId="+id)
	}
	if len(ev.Items) != 1 || !strings.Contains(string(ev.Items[0]), `"user_id":"system"`) || !strings.Contains(string(ev.Items[0]), `"disabledReason"`) {
		t.Errorf("webhook_endpoint.updated events = %s", ev.Items)
	}

	// Events written while it is off are delivered once it is back on.
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "2", Action: audit.Created, Actor: "system"},
		audit.Entry{EntityType: "Contact", EntityID: "3", Action: audit.Created, Actor: "system"})
	time.Sleep(300 * time.Millisecond)
	before := len(rc.requests())
	if before != 5 {
		t.Errorf("the receiver got %d requests while the endpoint was off, want the first event's 5", before)
	}
	up.Store(true)
	on := c.Do(t, "PUT", whPath(tn.ID, "/", id), tn.Key, map[string]any{"name": "hook", "url": rc.srv.URL + "/hook",
		"eventTypes": []string{"contact.created"}, "active": true}).Expect(t, http.StatusOK).Map(t)
	if on["active"] != true || on["disabledReason"] != nil {
		t.Errorf("switched on = %v", on)
	}
	var entities []string
	for _, g := range rc.waitFor(t, before+2)[before:] {
		entities = append(entities, checkSigned(t, g, secret, "contact.created")["data"].(map[string]any)["entity_id"].(string))
	}
	slices.Sort(entities)
	if strings.Join(entities, ",") != "2,3" {
		t.Errorf("delivered after re-enable: %v", entities)
	}
}
