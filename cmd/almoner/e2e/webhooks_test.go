package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/webhook"
)

func whPath(tenantID string, rest ...string) string {
	return "/api/tenants/" + tenantID + "/webhooks" + strings.Join(rest, "")
}

// testSecretKey seals webhook secrets in every cluster and child of the
// run, so dispatcher processes can open what the API process sealed.
var testSecretKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// received is one request a test receiver got.
type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is a local HTTPS webhook receiver that records what it gets and
// answers with status(n) for the n-th request (from 1).
type receiver struct {
	srv    *httptest.Server
	status func(n int, r *http.Request) int
	hang   bool
	mu     sync.Mutex
	got    []received
}

func newReceiver(t *testing.T, status func(n int, r *http.Request) int) *receiver {
	t.Helper()
	rc := &receiver{status: status}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{at: time.Now(), header: r.Header.Clone(), body: body})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.hang {
			<-r.Context().Done()
			return
		}
		code := http.StatusOK
		if rc.status != nil {
			code = rc.status(n, r)
		}
		w.WriteHeader(code)
		// A body the API must never show back.
		_, _ = w.Write([]byte("RECEIVER-PRIVATE-BODY"))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// deliveryWait bounds a wait for the dispatcher to deliver or record
// something. It is long because a delivery waits for more than this
// test: the dispatcher reads the audit log only below the oldest
// transaction running anywhere on the database server, and the server is
// shared with every other test (and whatever else runs on the machine),
// some of which hold transactions open for seconds. A passing test waits
// only as long as the delivery takes.
const deliveryWait = time.Minute

// waitFor waits until the receiver has got at least n requests and
// returns them.
func (rc *receiver) waitFor(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
	for {
		got := rc.requests()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests in %s, want %d", len(got), deliveryWait, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// caFile writes the certificate every httptest TLS server presents to a
// file for ALMONER_WEBHOOK_CA_FILE.
func caFile(t *testing.T, rc *receiver) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rc.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// devSettings are the development-only settings that let the dispatcher
// reach a local test receiver, with fast ticks and small retry units.
func devSettings(ca string, extra ...string) map[string]string {
	m := map[string]string{
		"ALMONER_WEBHOOK_ALLOW_PRIVATE": "true",
		"ALMONER_WEBHOOK_CA_FILE":       ca,
		"ALMONER_WEBHOOK_TICK":          "10ms",
		"ALMONER_WEBHOOK_RETRY_BASE":    "100ms",
		"ALMONER_WEBHOOK_SECRET_KEY":    testSecretKey,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func createWebhook(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, url string, types ...string) (id, secret string) {
	t.Helper()
	m := c.Do(t, "POST", whPath(tn.ID), tn.Key, map[string]any{"name": "hook", "url": url, "eventTypes": types}).Expect(t, http.StatusCreated).Map(t)
	return m["id"].(string), m["secret"].(string)
}

// writeAudit appends audit rows as a service would, in one transaction,
// and returns that transaction's id.
func writeAudit(t *testing.T, dbURL, tenantID string, entries ...audit.Entry) (xid uint64) {
	t.Helper()
	conn := dbConn(t, dbURL)
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::numeric::bigint`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		e.TenantID = tenantID
		if err := audit.Record(ctx, tx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return xid
}

// horizonWatch notes when transactions pass the audit horizon: the
// moment the dispatcher can first read their events. It polls on a
// connection of its own until stopped.
type horizonWatch struct {
	mu      sync.Mutex
	waiting map[uint64]bool
	passed  map[uint64]time.Time
	stop    chan struct{}
	done    chan struct{}
}

func watchHorizon(t *testing.T, dbURL string) *horizonWatch {
	t.Helper()
	conn := dbConn(t, dbURL)
	w := &horizonWatch{waiting: map[uint64]bool{}, passed: map[uint64]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			var xmin uint64
			err := conn.QueryRow(context.Background(), `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::numeric::bigint`).Scan(&xmin)
			now := time.Now()
			if err != nil {
				t.Error(err)
				return
			}
			w.mu.Lock()
			for xid := range w.waiting {
				if xmin > xid {
					w.passed[xid] = now
					delete(w.waiting, xid)
				}
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.close)
	return w
}

// watch starts watching transaction xid.
func (w *horizonWatch) watch(xid uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting[xid] = true
}

// passedAt is when xid passed the horizon (false while it has not).
func (w *horizonWatch) passedAt(xid uint64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.passed[xid]
	return at, ok
}

func (w *horizonWatch) close() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_WEBHOOK_SECRET_KEY": testSecretKey}})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	other := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	var bodies []string
	do := func(method, path, key string, body any) *apptest.Response {
		r := c.Do(t, method, path, key, body)
		bodies = append(bodies, string(r.Body))
		return r
	}

	// Create: 201 with exactly the spec's five properties, secret included.
	r := c.Do(t, "POST", whPath(tn.ID), tn.Key, map[string]any{"name": " Orders ", "url": "https://8.8.8.8/hooks/almoner",
		"eventTypes": []string{"order.created", "contact.created", "order.created"}, "description": "CRM sync"}).Expect(t, http.StatusCreated)
	created := r.Map(t)
	if got := strings.Join(sortedKeys(created), ","); got != "eventTypes,id,name,secret,url" {
		t.Errorf("create keys = %s", got)
	}
	secret := created["secret"].(string)
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) < 32 {
		t.Errorf("secret %.10s…: want whsec_ and 32 random bytes", secret)
	}
	if created["name"] != "Orders" || fmt.Sprint(created["eventTypes"]) != "[order.created contact.created]" {
		t.Errorf("created = %v", created)
	}
	id := created["id"].(string)
	second := c.Do(t, "POST", whPath(tn.ID), tn.Key, map[string]any{"name": "Two", "url": "https://8.8.4.4/", "eventTypes": []string{"fund.updated"}}).Expect(t, http.StatusCreated).Map(t)
	if second["secret"] == secret {
		t.Error("two endpoints share a secret")
	}

	// List: no secrets, ever.
	lr := do("GET", whPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	var list []map[string]any
	lr.JSON(t, &list)
	if len(list) != 2 || list[0]["id"] != id || list[0]["description"] != "CRM sync" || list[0]["active"] != true {
		t.Fatalf("list = %s", lr.Body)
	}
	if got := strings.Join(sortedKeys(list[0]), ","); got != "active,createdAt,description,disabledReason,eventTypes,id,name,updatedAt,url" {
		t.Errorf("list keys = %s", got)
	}

	// Update: every editable field; never the secret.
	ur := do("PUT", whPath(tn.ID, "/", id), tn.Key, map[string]any{"name": "Orders v2", "url": "https://1.1.1.1/h",
		"eventTypes": []string{"order.updated"}, "description": "", "active": false}).Expect(t, http.StatusOK)
	up := ur.Map(t)
	if up["name"] != "Orders v2" || up["url"] != "https://1.1.1.1/h" || up["active"] != false || fmt.Sprint(up["eventTypes"]) != "[order.updated]" || up["description"] != "" {
		t.Errorf("updated = %s", ur.Body)
	}

	// Event types: the catalog, each with a description.
	er := do("GET", whPath(tn.ID, "/event-types"), tn.Key, nil).Expect(t, http.StatusOK)
	var types []struct{ Name, Description string }
	er.JSON(t, &types)
	names := map[string]bool{}
	for _, ty := range types {
		names[ty.Name] = ty.Description != ""
	}
	for _, want := range []string{"contact.created", "contact.updated", "contact.deleted", "order.created", "order_payment.created",
		"order_donation.deleted", "batch.updated", "fund.created", "shipment.created", "recurring_donation.updated", "inventory_item.deleted"} {
		if !names[want] {
			t.Errorf("event types lack %s (or its description): %s", want, er.Body)
		}
	}

	// Deliveries: the standard envelope, empty so far.
	dr := do("GET", whPath(tn.ID, "/", id, "/deliveries"), tn.Key, nil).Expect(t, http.StatusOK)
	if got := strings.Join(sortedKeys(dr.Map(t)), ","); got != "items,page,pageSize,totalCount" || !strings.Contains(string(dr.Body), `"items":[]`) {
		t.Errorf("deliveries = %s", dr.Body)
	}
	do("GET", whPath(tn.ID, "/", id, "/deliveries?pageSize=101"), tn.Key, nil).Expect(t, http.StatusBadRequest)

	// Validation.
	badCases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"unknown event type", map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"contact.created", "contact.exploded"}}, "EventTypes[1]"},
		{"test event not subscribable", map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"webhook.test"}}, "EventTypes[0]"},
		{"empty list", map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{}}, "EventTypes"},
		{"no name", map[string]any{"url": "https://8.8.8.8/", "eventTypes": []string{"contact.created"}}, "Name"},
		{"http", map[string]any{"name": "x", "url": "http://8.8.8.8/", "eventTypes": []string{"contact.created"}}, "Url"},
		{"user info", map[string]any{"name": "x", "url": "https://user:pass@8.8.8.8/", "eventTypes": []string{"contact.created"}}, "Url"},
	}
	for _, host := range []string{"127.0.0.1", "localhost", "[::1]", "[::ffff:7f00:1]", "169.254.169.254", "10.0.0.1", "100.64.0.1", "192.168.0.10", "0.0.0.0", "[fe80::1]"} {
		badCases = append(badCases, struct {
			name  string
			body  map[string]any
			field string
		}{"ssrf " + host, map[string]any{"name": "x", "url": "https://" + host + ":8443/hook", "eventTypes": []string{"contact.created"}}, "Url"})
	}
	for _, bc := range badCases {
		for _, req := range []struct{ method, path string }{{"POST", whPath(tn.ID)}, {"PUT", whPath(tn.ID, "/", id)}} {
			var p invProblem
			do(req.method, req.path, tn.Key, bc.body).Expect(t, http.StatusBadRequest).JSON(t, &p)
			if len(p.Errors[bc.field]) == 0 {
				t.Errorf("%s %s: errors %v, want key %s", bc.name, req.method, p.Errors, bc.field)
			}
		}
	}

	// Scopes: view reads, manage changes.
	viewer := c.NewKey(t, tn.ID, "webhooks:view")
	nobody := c.NewKey(t, tn.ID, "contacts:view")
	do("GET", whPath(tn.ID), viewer, nil).Expect(t, http.StatusOK)
	do("GET", whPath(tn.ID, "/event-types"), viewer, nil).Expect(t, http.StatusOK)
	do("GET", whPath(tn.ID, "/", id, "/deliveries"), viewer, nil).Expect(t, http.StatusOK)
	for _, rq := range []struct {
		method, path, key, scope string
		body                     any
	}{
		{"POST", whPath(tn.ID), viewer, "webhooks:manage", map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"contact.created"}}},
		{"PUT", whPath(tn.ID, "/", id), viewer, "webhooks:manage", map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"contact.created"}}},
		{"DELETE", whPath(tn.ID, "/", id), viewer, "webhooks:manage", nil},
		{"POST", whPath(tn.ID, "/", id, "/test"), viewer, "webhooks:manage", nil},
		{"GET", whPath(tn.ID), nobody, "webhooks:view", nil},
		{"GET", whPath(tn.ID, "/event-types"), nobody, "webhooks:view", nil},
		{"GET", whPath(tn.ID, "/", id, "/deliveries"), nobody, "webhooks:view", nil},
	} {
		r := do(rq.method, rq.path, rq.key, rq.body).Expect(t, http.StatusForbidden)
		if !strings.Contains(string(r.Body), "Missing required permission: "+rq.scope) {
			t.Errorf("%s %s: %s", rq.method, rq.path, r.Body)
		}
	}

	// Another tenant's endpoint, or a path that does not parse: 404.
	for _, path := range []string{whPath(other.ID, "/", id), whPath(tn.ID, "/not-a-uuid"), whPath(tn.ID, "/0190a4d6-0000-7000-8000-000000000000")} {
		key := other.Key
		if !strings.Contains(path, other.ID) {
			key = tn.Key
		}
		do("PUT", path, key, map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"contact.created"}}).Expect(t, http.StatusNotFound)
		do("DELETE", path, key, nil).Expect(t, http.StatusNotFound)
		do("GET", path+"/deliveries", key, nil).Expect(t, http.StatusNotFound)
		do("POST", path+"/test", key, nil).Expect(t, http.StatusNotFound)
	}
	var otherList []map[string]any
	do("GET", whPath(other.ID), other.Key, nil).Expect(t, http.StatusOK).JSON(t, &otherList)
	if len(otherList) != 0 {
		t.Errorf("other tenant sees %v", otherList)
	}

	// Test needs webhooks:enabled.
	plain := c.NewTenant(t)
	pid, _ := createWebhook(t, c, plain, "https://8.8.8.8/", "contact.created")
	if r := do("POST", whPath(plain.ID, "/", pid, "/test"), plain.Key, nil).Expect(t, http.StatusForbidden); !strings.Contains(string(r.Body), "Feature not enabled: webhooks:enabled") {
		t.Errorf("test without the feature: %s", r.Body)
	}

	// Delete revokes: gone from the list, no more changes, records readable.
	do("DELETE", whPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusNoContent)
	do("DELETE", whPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusNotFound)
	do("PUT", whPath(tn.ID, "/", id), tn.Key, map[string]any{"name": "x", "url": "https://8.8.8.8/", "eventTypes": []string{"contact.created"}}).Expect(t, http.StatusNotFound)
	do("GET", whPath(tn.ID, "/", id, "/deliveries"), tn.Key, nil).Expect(t, http.StatusOK)
	do("GET", whPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	if len(list) != 1 || list[0]["id"] == id {
		t.Errorf("after delete: %v", list)
	}

	// The secret appeared in the create response only.
	for _, b := range bodies {
		if strings.Contains(b, secret) || strings.Contains(b, `"secret"`) {
			t.Fatalf("a later response shows the secret: %s", b)
		}
	}
	// The audit log has the endpoint's changes, never the secret.
	var n int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM audit.events WHERE tenant_id = $1 AND entity_type = 'WebhookEndpoint'
		AND coalesce(changes::text, '') NOT LIKE '%whsec_%'`, tn.ID).Scan(&n); err != nil || n != 4 {
		t.Errorf("endpoint audit rows = %d, %v; want 4 (2 created, 1 updated, 1 deleted)", n, err)
	}
}

// checkSigned verifies one received request as a receiver would, with
// Verify and with an independent HMAC computation.
func checkSigned(t *testing.T, got received, secret, event string) map[string]any {
	t.Helper()
	h := got.header
	if h.Get("Content-Type") != "application/json" || h.Get("X-Webhook-Event") != event || len(h.Get("X-Webhook-Delivery-Id")) != 36 {
		t.Errorf("headers = %v", h)
	}
	ts := h.Get("X-Webhook-Timestamp")
	if err := webhook.Verify(secret, h.Get("X-Webhook-Signature"), ts, got.body, 5*time.Minute); err != nil {
		t.Errorf("Verify: %v", err)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(got.body)))
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); h.Get("X-Webhook-Signature") != want {
		t.Errorf("signature %s, independent HMAC %s", h.Get("X-Webhook-Signature"), want)
	}
	var body map[string]any
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	if body["event"] != event {
		t.Errorf("body event %v, want %s", body["event"], event)
	}
	return body
}

func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	id, secret := createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created", "order.created")

	writeAudit(t, c.DatabaseURL, tn.ID,
		audit.Entry{EntityType: "Contact", EntityID: "42", Action: audit.Created, Actor: "api-key:ak_test_abc"},
		audit.Entry{EntityType: "Contact", EntityID: "42", Action: audit.Updated, Actor: "system", Changes: map[string]audit.Change{"name": {Old: "a", New: "b"}}},
		audit.Entry{EntityType: "Order", EntityID: "0190a4d6-0000-7000-8000-0000000000aa", Action: audit.Created, Actor: "system"},
	)
	got := rc.waitFor(t, 2)
	byEvent := map[string]received{}
	for _, g := range got {
		byEvent[g.header.Get("X-Webhook-Event")] = g
	}
	var eventIDs []string
	rows, _ := dbConn(t, c.DatabaseURL).Query(context.Background(), `SELECT event_id::text FROM audit.events WHERE tenant_id = $1 AND event IN ('contact.created', 'order.created') ORDER BY id`, tn.ID)
	eventIDs, _ = pgx.CollectRows(rows, pgx.RowTo[string])
	cb := checkSigned(t, byEvent["contact.created"], secret, "contact.created")
	data, _ := cb["data"].(map[string]any)
	if cb["id"] != eventIDs[0] || data["entity_type"] != "Contact" || data["entity_id"] != "42" || data["action"] != "Created" ||
		data["user_id"] != "api-key:ak_test_abc" || data["changes"] != nil || !strings.HasSuffix(cb["timestamp"].(string), "Z") {
		t.Errorf("contact.created body = %s", byEvent["contact.created"].body)
	}
	if got := strings.Join(sortedKeys(data), ","); got != "action,changes,entity_id,entity_type,user_id" {
		t.Errorf("data keys = %s", got)
	}
	ob := checkSigned(t, byEvent["order.created"], secret, "order.created")
	if ob["id"] != eventIDs[1] {
		t.Errorf("order.created id %v, want %s", ob["id"], eventIDs[1])
	}

	// Through the real contacts endpoint, when that service accepts this body.
	cr := c.Do(t, "POST", "/api/tenants/"+tn.ID+"/contacts", tn.Key, map[string]any{"contactType": "Individual", "firstName": "Ada", "lastName": "Lovelace"})
	if cr.Status == http.StatusCreated {
		got = rc.waitFor(t, 3)
		b := checkSigned(t, got[2], secret, "contact.created")
		if d := b["data"].(map[string]any); d["entity_type"] != "Contact" || !strings.HasPrefix(d["user_id"].(string), "api-key:ak_test_") {
			t.Errorf("contact created through the API: %s", got[2].body)
		}
	} else {
		t.Logf("contacts endpoint answered %d; delivery through it not checked: %s", cr.Status, cr.Body)
	}
	time.Sleep(100 * time.Millisecond)
	n := len(rc.requests())
	if n != 2 && n != 3 {
		t.Errorf("receiver got %d requests; the update was not subscribed", n)
	}

	// The records: success, status, attempt, timing. Each is written
	// after its receiver answered: wait for them.
	page := waitDeliveries(t, c, tn, id, "", min(n, 3))
	if page.TotalCount < 2 || page.Items[0]["success"] != true || page.Items[0]["statusCode"] != float64(200) || page.Items[0]["attemptNumber"] != float64(1) || page.Items[0]["error"] != nil {
		t.Errorf("deliveries = %+v", page)
	}
	if got := strings.Join(sortedKeys(page.Items[0]), ","); got != "abandoned,attemptNumber,attemptedAt,deliveryId,durationMs,error,eventId,eventType,id,statusCode,success" {
		t.Errorf("delivery keys = %s", got)
	}

	// Test: a synthetic webhook.test now, its record returned.
	before := len(rc.requests())
	tr := c.Do(t, "POST", whPath(tn.ID, "/", id, "/test"), tn.Key, nil).Expect(t, http.StatusOK)
	rec := tr.Map(t)
	if rec["success"] != true || rec["statusCode"] != float64(200) || rec["eventType"] != "webhook.test" || strings.Contains(string(tr.Body), "RECEIVER-PRIVATE-BODY") {
		t.Errorf("test = %s", tr.Body)
	}
	got = rc.requests()
	if len(got) != before+1 {
		t.Fatalf("test sent %d requests", len(got)-before)
	}
	tb := checkSigned(t, got[before], secret, "webhook.test")
	if got[before].header.Get("X-Webhook-Delivery-Id") != rec["id"] || tb["id"] != rec["eventId"] {
		t.Errorf("test record %v does not match the request %v", rec, got[before].header)
	}

	// A redirect is never followed, even to an address the dev flag allows.
	var hits sync.WaitGroup
	internal := newReceiver(t, func(int, *http.Request) int { hits.Add(1); return 200 })
	redir := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.srv.URL+"/internal", http.StatusFound)
	}))
	defer redir.Close()
	rid, _ := createWebhook(t, c, tn, redir.URL+"/", "contact.created")
	rr := c.Do(t, "POST", whPath(tn.ID, "/", rid, "/test"), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if rr["success"] != false || rr["statusCode"] != float64(302) || !strings.Contains(fmt.Sprint(rr["error"]), "redirect") {
		t.Errorf("redirect test = %v", rr)
	}
	if n := len(internal.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

func TestWebhookRetriesThenAbandons(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int, *http.Request) int { return http.StatusInternalServerError })
	// Wide enough that the scheduler's tick and a loaded machine's delays
	// (both cores are shared with the rest of the suite) are small against it.
	const unit = 250 * time.Millisecond
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc), "ALMONER_WEBHOOK_RETRY_BASE", unit.String())})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	id, _ := createWebhook(t, c, tn, rc.srv.URL, "fund.created")
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Fund", EntityID: "f1", Action: audit.Created, Actor: "system"})
	// Abandoned is final: once the delivery says so, no attempt follows,
	// and the receiver's count is the number of attempts made.
	conn := dbConn(t, c.DatabaseURL)
	for deadline := time.Now().Add(deliveryWait); ; time.Sleep(20 * time.Millisecond) {
		var state string
		err := conn.QueryRow(context.Background(), `SELECT state FROM webhooks.deliveries WHERE tenant_id = $1`, tn.ID).Scan(&state)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if state == "abandoned" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery state %q after %s and %d attempts, want abandoned after 5", state, deliveryWait, len(rc.requests()))
		}
	}
	got := rc.requests()
	if len(got) != 5 {
		t.Fatalf("attempts = %d, want 5", len(got))
	}
	ids := map[string]bool{}
	for i, g := range got {
		ids[g.header.Get("X-Webhook-Delivery-Id")] = true
		var b map[string]any
		_ = json.Unmarshal(g.body, &b)
		var b0 map[string]any
		_ = json.Unmarshal(got[0].body, &b0)
		if b["id"] != b0["id"] {
			t.Errorf("attempt %d carries event id %v, want %v", i+1, b["id"], b0["id"])
		}
	}
	if len(ids) != 5 {
		t.Errorf("delivery ids are not unique per attempt: %v", ids)
	}
	var page struct {
		Items      []map[string]any
		TotalCount int
	}
	c.Do(t, "GET", whPath(tn.ID, "/", id, "/deliveries?pageSize=10"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
	if page.TotalCount != 5 || len(page.Items) != 5 {
		t.Fatalf("deliveries = %+v", page)
	}
	for i, it := range page.Items {
		// Newest first: attempt 5 down to 1; only the last is abandoned.
		if it["attemptNumber"] != float64(5-i) || it["success"] != false || it["statusCode"] != float64(500) ||
			it["error"] != "HTTP 500" || it["abandoned"] != (i == 0) {
			t.Errorf("item %d = %v", i, it)
		}
	}
	// 0, 1, 3, 7, 15 units after the first attempt: each wait is 2^(n-1)
	// units after attempt n. The times are the dispatcher's own (when it
	// began each attempt, before dialling), not the receiver's: a first
	// attempt's TLS handshake on a loaded machine took a good part of a
	// unit and made the next gap look short. Each gap is checked on its
	// own, since a late attempt delays the ones after it.
	for i := 1; i < len(page.Items); i++ {
		prev, next := mustTime(t, page.Items[len(page.Items)-i]["attemptedAt"].(string)), mustTime(t, page.Items[len(page.Items)-1-i]["attemptedAt"].(string))
		want, gap := time.Duration(1<<(i-1))*unit, next.Sub(prev)
		if gap < want-unit/2 || gap > want+2*unit {
			t.Errorf("attempt %d began %s after attempt %d, want %s", i+1, gap, i, want)
		}
	}
}

func TestWebhookTimeoutDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	slow := newReceiver(t, nil)
	slow.hang = true
	fast := newReceiver(t, nil)
	const timeout = 3 * time.Second
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, fast), "ALMONER_WEBHOOK_TIMEOUT", timeout.String(), "ALMONER_WEBHOOK_RETRY_BASE", "1h")})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	slowID, _ := createWebhook(t, c, tn, slow.srv.URL, "batch.created")
	createWebhook(t, c, tn, fast.srv.URL, "batch.created")
	// Five events in five ticks or more, each timed from the moment the
	// dispatcher could first read it: the audit horizon is the whole
	// server's, and another test's open transaction can hold an event back
	// for seconds, which is not the dispatcher waiting.
	hw := watchHorizon(t, c.DatabaseURL)
	xids := map[string]uint64{}
	for i := 0; i < 5; i++ {
		xid := writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Batch", EntityID: fmt.Sprint(i), Action: audit.Created, Actor: "system"})
		hw.watch(xid)
		xids[fmt.Sprint(i)] = xid
		time.Sleep(30 * time.Millisecond)
	}
	// Had the fast endpoint waited behind the hanging one, an event
	// readable while the slow endpoint's attempt of an earlier one hung
	// would have reached it only after that attempt's timeout.
	for _, g := range fast.waitFor(t, 5) {
		var b struct {
			Data struct {
				EntityID string `json:"entity_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(g.body, &b); err != nil {
			t.Fatal(err)
		}
		readable, ok := hw.passedAt(xids[b.Data.EntityID])
		if !ok {
			// Delivered, so readable: the watch had not polled yet.
			readable = g.at
		}
		if d := g.at.Sub(readable); d > timeout*5/6 {
			t.Errorf("event %s reached the fast receiver %s after it was readable: it waited for the slow one", b.Data.EntityID, d)
		}
	}
	hw.close()
	deadline := time.Now().Add(deliveryWait)
	for {
		var page struct{ Items []map[string]any }
		c.Do(t, "GET", whPath(tn.ID, "/", slowID, "/deliveries"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &page)
		if len(page.Items) == 5 {
			for _, it := range page.Items {
				ms := it["durationMs"].(float64)
				if it["success"] != false || it["error"] != "timeout" || it["statusCode"] != nil || ms < 2900 || ms > 8000 {
					t.Errorf("slow attempt = %v", it)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow endpoint records: %v", page.Items)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWebhookFeatureOffSendsNothing(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t) // api-access only
	createWebhook(t, c, tn, rc.srv.URL, "contact.created")
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "1", Action: audit.Created, Actor: "system"})
	time.Sleep(500 * time.Millisecond)
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("feature off, receiver got %d requests", n)
	}
	var n int
	if err := dbConn(t, c.DatabaseURL).QueryRow(context.Background(), `SELECT count(*) FROM webhooks.deliveries WHERE tenant_id = $1`, tn.ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("deliveries queued: %d, %v", n, err)
	}
}
