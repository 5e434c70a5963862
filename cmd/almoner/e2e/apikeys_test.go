package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/services/auth/keyformat"
)

func keysPath(tenantID string) string { return "/api/tenants/" + tenantID + "/api-keys" }

func createKey(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, body any) map[string]any {
	t.Helper()
	return c.Do(t, "POST", keysPath(tn.ID), tn.Key, body).Expect(t, http.StatusCreated).Map(t)
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)

	created := createKey(t, c, tn, map[string]any{"name": "nightly-export-job", "scopes": []string{"donations:view", "contacts:view"}})
	wantKeys := []string{"expiresAt", "id", "keyPrefix", "name", "plainTextKey", "scopes"}
	if got := sortedKeys(created); strings.Join(got, ",") != strings.Join(wantKeys, ",") {
		t.Errorf("create response keys = %v, want %v", got, wantKeys)
	}
	if created["expiresAt"] != nil {
		t.Errorf("expiresAt = %v, want null", created["expiresAt"])
	}
	plain := created["plainTextKey"].(string)
	prefix := created["keyPrefix"].(string)
	if !strings.HasPrefix(plain, "ak_test_") || !strings.HasPrefix(plain, prefix) || len(prefix) != 20 {
		t.Errorf("key %q with prefix %q", plain, prefix)
	}
	// Scopes come back in catalog order, de-duplicated.
	if got := created["scopes"].([]any); len(got) != 2 || got[0] != "contacts:view" || got[1] != "donations:view" {
		t.Errorf("scopes = %v", got)
	}

	list := c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	var items []map[string]any
	list.JSON(t, &items)
	if len(items) != 2 {
		t.Fatalf("list has %d keys, want 2: %s", len(items), list.Body)
	}
	wantList := []string{"createdAt", "expiresAt", "id", "keyPrefix", "lastUsedAt", "name", "scopes"}
	for _, it := range items {
		if got := sortedKeys(it); strings.Join(got, ",") != strings.Join(wantList, ",") {
			t.Errorf("list item keys = %v, want %v", got, wantList)
		}
	}
	if items[0]["id"] != created["id"] {
		t.Errorf("list is not newest first: %v", items[0]["id"])
	}
	if bytes.Contains(list.Body, []byte(plain)) || bytes.Contains(list.Body, []byte("plainTextKey")) {
		t.Error("list shows the plain key")
	}

	// The new key works for what it may do and nothing else.
	c.Do(t, "GET", keysPath(tn.ID), plain, nil).Expect(t, http.StatusForbidden)

	// Revoke: 204 with no body, then the key is gone from the list.
	del := c.Do(t, "DELETE", keysPath(tn.ID)+"/"+created["id"].(string), tn.Key, nil).Expect(t, http.StatusNoContent)
	if len(del.Body) != 0 {
		t.Errorf("204 with body %q", del.Body)
	}
	c.Do(t, "GET", keysPath(tn.ID), plain, nil).Expect(t, http.StatusUnauthorized)
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+created["id"].(string), tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "DELETE", keysPath(tn.ID)+"/not-a-uuid", tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	if len(items) != 1 {
		t.Errorf("after revoke the list has %d keys", len(items))
	}

	// The plain key is stored nowhere: not in any table, not in the logs.
	if strings.Contains(c.Logs.String(), plain) {
		t.Error("the plain key was logged")
	}
	assertNotInDatabase(t, c.DatabaseURL, plain)
	assertNotInDatabase(t, c.DatabaseURL, plain[len(prefix)+1:])

	// Every change left its audit row.
	conn := dbConn(t, c.DatabaseURL)
	var events []string
	rows, err := conn.Query(context.Background(), `SELECT event FROM audit.events WHERE tenant_id = $1 AND entity_id = $2 ORDER BY id`, tn.ID, created["id"])
	if err != nil {
		t.Fatal(err)
	}
	events, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(events, ",") != "api_key.created,api_key.deleted" {
		t.Errorf("audit events = %v", events)
	}
}

func TestAPIKeyExpiresAt(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	created := createKey(t, c, tn, map[string]any{"name": "temp", "scopes": []string{"api-keys:manage"}, "expiresAt": at.Format(time.RFC3339)})
	if created["expiresAt"] != at.Format(time.RFC3339) {
		t.Errorf("expiresAt = %v, want %s", created["expiresAt"], at.Format(time.RFC3339))
	}
}

func TestAPIKeyValidation(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	cases := []struct {
		name string
		body any
		want map[string]string // property path → part of the message
	}{
		{"malformed JSON", `{"name": "x", `, map[string]string{"$": "not valid JSON"}},
		{"not an object", `[1,2]`, map[string]string{"$": "JSON object"}},
		{"wrong type", map[string]any{"name": 5, "scopes": []string{"contacts:view"}}, map[string]string{"Name": "must be a string"}},
		{"scopes not an array", map[string]any{"name": "a", "scopes": "contacts:view"}, map[string]string{"Scopes": "must be an array"}},
		{"element wrong type", map[string]any{"name": "a", "scopes": []any{"contacts:view", 7}}, map[string]string{"Scopes[1]": "must be a string"}},
		{"missing name", map[string]any{"scopes": []string{"contacts:view"}}, map[string]string{"Name": "must not be empty"}},
		{"blank name", map[string]any{"name": "   ", "scopes": []string{"contacts:view"}}, map[string]string{"Name": "must not be empty"}},
		{"long name", map[string]any{"name": strings.Repeat("x", 101), "scopes": []string{"contacts:view"}}, map[string]string{"Name": "100 characters"}},
		{"no scopes", map[string]any{"name": "a", "scopes": []string{}}, map[string]string{"Scopes": "at least one"}},
		{"unknown scope", map[string]any{"name": "a", "scopes": []string{"contacts:view", "contacts:destroy"}}, map[string]string{"Scopes[1]": "not a known scope"}},
		{"bad timestamp", map[string]any{"name": "a", "scopes": []string{"contacts:view"}, "expiresAt": "tomorrow"}, map[string]string{"ExpiresAt": "ISO 8601"}},
		{"past expiry", map[string]any{"name": "a", "scopes": []string{"contacts:view"}, "expiresAt": "2020-01-01T00:00:00Z"}, map[string]string{"ExpiresAt": "in the future"}},
		{"several at once", map[string]any{"scopes": []string{"nope"}}, map[string]string{"Name": "empty", "Scopes[0]": "known"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(t, "POST", keysPath(tn.ID), tn.Key, tc.body).Expect(t, http.StatusBadRequest)
			if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var p struct {
				Type, Title, Instance, TraceID string
				Status                         int
				Errors                         map[string][]string
			}
			r.JSON(t, &p)
			if p.Type != "/errors/validation" || p.Title != "One or more validation errors occurred." || p.Status != 400 ||
				p.Instance != keysPath(tn.ID) || len(p.TraceID) != 32 {
				t.Errorf("problem = %+v", p)
			}
			if len(p.Errors) != len(tc.want) {
				t.Errorf("errors = %v, want keys %v", p.Errors, tc.want)
			}
			for k, frag := range tc.want {
				if msgs := p.Errors[k]; len(msgs) == 0 || !strings.Contains(msgs[0], frag) {
					t.Errorf("errors[%q] = %v, want it to mention %q", k, msgs, frag)
				}
			}
		})
	}
	// Nothing was created by any of them.
	var items []map[string]any
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	if len(items) != 1 {
		t.Errorf("bad requests created keys: %d in the list", len(items))
	}
}

func TestAPIKeyCannotGrantMoreThanItHas(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	limited := c.NewKey(t, tn.ID, "api-keys:manage", "contacts:view")
	c.Do(t, "POST", keysPath(tn.ID), limited, map[string]any{"name": "ok", "scopes": []string{"contacts:view"}}).Expect(t, http.StatusCreated)
	r := c.Do(t, "POST", keysPath(tn.ID), limited, map[string]any{"name": "escalate", "scopes": []string{"contacts:view", "orders:void"}}).Expect(t, http.StatusForbidden)
	if title := r.Map(t)["title"]; title != "Missing required permission: orders:void" {
		t.Errorf("title = %v", title)
	}
}

func TestForbiddenAndNotFound(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	a, b := c.NewTenant(t), c.NewTenant(t)
	viewer := c.NewKey(t, a.ID, "contacts:view")

	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", keysPath(a.ID), nil},
		{"POST", keysPath(a.ID), map[string]any{"name": "x", "scopes": []string{"contacts:view"}}},
		{"DELETE", keysPath(a.ID) + "/0190a4d6-0000-7000-8000-000000000000", nil},
	} {
		r := c.Do(t, req.method, req.path, viewer, req.body).Expect(t, http.StatusForbidden)
		p := r.Map(t)
		if p["title"] != "Missing required permission: api-keys:manage" || p["type"] != "/errors/forbidden" || p["status"] != float64(403) {
			t.Errorf("%s %s: problem = %v", req.method, req.path, p)
		}
	}

	// Another tenant's path is 404 before any handler, whatever the scopes.
	for _, key := range []string{a.Key, viewer} {
		r := c.Do(t, "GET", keysPath(b.ID), key, nil).Expect(t, http.StatusNotFound)
		if r.Map(t)["type"] != "/errors/not-found" {
			t.Errorf("404 body %s", r.Body)
		}
	}
	c.Do(t, "GET", keysPath("not-a-tenant"), a.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", "/api/tenants", a.Key, nil).Expect(t, http.StatusNotFound)
	// B's key cannot revoke A's key through B's path either.
	var items []map[string]any
	c.Do(t, "GET", keysPath(a.ID), a.Key, nil).JSON(t, &items)
	c.Do(t, "DELETE", keysPath(b.ID)+"/"+items[0]["id"].(string), b.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", keysPath(a.ID), a.Key, nil).Expect(t, http.StatusOK)

	// Unknown routes and methods are problems too.
	r := c.Do(t, "GET", "/api/tenants/"+a.ID+"/nothing-here", a.Key, nil).Expect(t, http.StatusNotFound)
	if r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("unknown route Content-Type %q", r.Header.Get("Content-Type"))
	}
	c.Do(t, "GET", "/no/such/path", "", nil).Expect(t, http.StatusNotFound)
	c.Do(t, "PATCH", keysPath(a.ID), a.Key, nil).Expect(t, http.StatusMethodNotAllowed)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	big := `{"name":"` + strings.Repeat("a", 1<<20) + `","scopes":["contacts:view"]}`
	r := c.Do(t, "POST", keysPath(tn.ID), tn.Key, big).Expect(t, http.StatusRequestEntityTooLarge)
	if p := r.Map(t); p["type"] != "/errors/payload-too-large" || p["status"] != float64(413) {
		t.Errorf("413 problem = %v", p)
	}
}

func TestUnauthorizedResponsesAreIdentical(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Environment: "sandbox"})
	ctx := context.Background()

	live := c.NewTenant(t)
	path := keysPath(live.ID)

	revoked := createKey(t, c, live, map[string]any{"name": "revoked", "scopes": []string{"api-keys:manage"}})
	c.Do(t, "DELETE", path+"/"+revoked["id"].(string), live.Key, nil).Expect(t, http.StatusNoContent)

	// It must still be valid for this first use (which puts it in the
	// gateway's key cache), created and used in time on a loaded machine
	// too; the cluster started below takes most of its life anyway.
	expiring := createKey(t, c, live, map[string]any{"name": "expiring", "scopes": []string{"api-keys:manage"},
		"expiresAt": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)})
	c.Do(t, "GET", path, expiring["plainTextKey"].(string), nil).Expect(t, http.StatusOK)

	deactivated := c.NewTenant(t)
	if _, err := c.Admin.SetTenantActive(ctx, &authv1.SetTenantActiveRequest{TenantId: deactivated.ID, Active: false}); err != nil {
		t.Fatal(err)
	}
	featureOff := c.NewTenant(t)
	if _, err := c.Admin.SetTenantFeature(ctx, &authv1.SetTenantFeatureRequest{TenantId: featureOff.ID, Feature: "api-access:enabled", Enabled: false}); err != nil {
		t.Fatal(err)
	}
	// A production deployment on the same database makes a real ak_live_ key.
	prod := apptest.Start(t, apptest.Options{Environment: "production", DatabaseURL: c.DatabaseURL})
	prodTenant := prod.NewTenant(t)
	if !strings.HasPrefix(prodTenant.Key, "ak_live_") {
		t.Fatalf("production key %q", prodTenant.Key)
	}
	prod.Do(t, "GET", keysPath(prodTenant.ID), prodTenant.Key, nil).Expect(t, http.StatusOK)

	time.Sleep(time.Until(mustTime(t, expiring["expiresAt"].(string))) + 50*time.Millisecond)

	// Well-formed, right checksum, but never issued: it reaches the database.
	unknown, err := keyformat.New(keyformat.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ key, path string }{
		"missing header":     {"", path},
		"garbage":            {"hello", path},
		"unknown key":        {unknown.Plain, path},
		"bad checksum":       {live.Key[:len(live.Key)-1] + flipChar(live.Key[len(live.Key)-1]), path},
		"wrong secret":       {live.Key[:30] + flipChar(live.Key[30]) + live.Key[31:], path},
		"revoked":            {revoked["plainTextKey"].(string), path},
		"expired":            {expiring["plainTextKey"].(string), path},
		"tenant deactivated": {deactivated.Key, path},
		"api access off":     {featureOff.Key, path},
		"other environment":  {prodTenant.Key, path},
	}
	var first *apptest.Response
	var firstName string
	for name, tc := range cases {
		r := c.Do(t, "GET", tc.path, tc.key, nil)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s: status %d: %s", name, r.Status, r.Body)
			continue
		}
		if first == nil {
			first, firstName = r, name
			continue
		}
		if !bytes.Equal(r.Body, first.Body) {
			t.Errorf("%s body %q differs from %s body %q", name, r.Body, firstName, first.Body)
		}
		if a, b := headerWithoutDate(r.Header), headerWithoutDate(first.Header); a != b {
			t.Errorf("%s headers %q differ from %s headers %q", name, a, firstName, b)
		}
	}
	if first != nil && !bytes.Equal(first.Body, []byte(`{"type":"/errors/unauthorized","title":"Unauthorized","status":401}`+"\n")) {
		t.Errorf("401 body = %q", first.Body)
	}
}

func TestRevocationIsImmediateUnderLoad(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	victim := createKey(t, c, tn, map[string]any{"name": "victim", "scopes": []string{"api-keys:manage"}})
	key := victim["plainTextKey"].(string)

	type result struct {
		start  time.Time
		status int
	}
	var (
		mu       sync.Mutex
		results  []result
		stop     atomic.Bool
		wg       sync.WaitGroup
		okBefore atomic.Int64
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				req, _ := http.NewRequestWithContext(t.Context(), "GET", c.URL+keysPath(tn.ID), nil)
				req.Header.Set("X-Api-Key", key)
				resp, err := c.HTTP.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					okBefore.Add(1)
				}
				mu.Lock()
				results = append(results, result{start, resp.StatusCode})
				mu.Unlock()
			}
		}()
	}
	for okBefore.Load() < 40 {
		time.Sleep(5 * time.Millisecond)
	}
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+victim["id"].(string), tn.Key, nil).Expect(t, http.StatusNoContent)
	revokedAt := time.Now()
	// Enough requests started after the revocation to tell: a fixed
	// 300 ms was not, on a loaded machine, where requests in flight at
	// the revocation took most of it.
	startedAfter := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, r := range results {
			if r.start.After(revokedAt) {
				n++
			}
		}
		return n
	}
	time.Sleep(300 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); startedAfter() < 20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	after, before := 0, 0
	for _, r := range results {
		if r.start.After(revokedAt) {
			after++
			if r.status != http.StatusUnauthorized {
				t.Errorf("a request started %v after revocation got %d", r.start.Sub(revokedAt), r.status)
			}
		} else {
			before++
			if r.status != http.StatusOK && r.status != http.StatusUnauthorized {
				t.Errorf("request before revocation got %d", r.status)
			}
		}
	}
	if after < 20 || before < 40 {
		t.Errorf("too little load to tell: %d requests before, %d after", before, after)
	}
}

func TestLastUsedAtMoves(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_KEY_USAGE_FLUSH": "100ms"}})
	tn := c.NewTenant(t)
	k := createKey(t, c, tn, map[string]any{"name": "reader", "scopes": []string{"api-keys:manage"}})
	id, key := k["id"].(string), k["plainTextKey"].(string)

	conn := dbConn(t, c.DatabaseURL)
	lastUsed := func() *time.Time {
		var at *time.Time
		if err := conn.QueryRow(context.Background(), `SELECT last_used_at FROM auth.api_keys WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := lastUsed(); at != nil {
		t.Fatalf("unused key has last_used_at %v", at)
	}
	before := time.Now()
	c.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusOK)
	// The background flush writes it without any further request.
	// Generous: the flush is every 100 ms, but a loaded machine can hold
	// a background loop back for seconds.
	deadline := time.Now().Add(30 * time.Second)
	for lastUsed() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	at := lastUsed()
	if at == nil || at.Before(before.Add(-time.Second)) {
		t.Fatalf("last_used_at = %v after a use at %v", at, before)
	}
	// A second use moves it forward, and the list shows it before the next
	// flush: a use answered from the gateway's key cache reaches the auth
	// service with the cache's next epoch poll (a quarter of the window).
	time.Sleep(20 * time.Millisecond)
	c.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusOK)
	shown := func() time.Time {
		var items []map[string]any
		c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
		for _, it := range items {
			if it["id"] == id {
				return mustTime(t, it["lastUsedAt"].(string))
			}
		}
		t.Fatalf("key %s not listed", id)
		return time.Time{}
	}
	deadline = time.Now().Add(30 * time.Second)
	for !shown().After(*at) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := shown(); !got.After(*at) {
		t.Errorf("lastUsedAt %v did not move past %v", got, at)
	}
}

func TestDatabaseFailureIsSanitized(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	conn := dbConn(t, c.DatabaseURL)
	// Break the list query (validation does not read this column).
	if _, err := conn.Exec(context.Background(), `ALTER TABLE auth.api_keys RENAME COLUMN created_at TO created_at_broken`); err != nil {
		t.Fatal(err)
	}
	r := c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusInternalServerError)
	p := r.Map(t)
	if p["type"] != "/errors/internal" || p["title"] != "An unexpected error occurred." {
		t.Errorf("500 problem = %v", p)
	}
	trace, _ := p["traceId"].(string)
	if len(trace) != 32 {
		t.Errorf("traceId = %q", trace)
	}
	body := strings.ToLower(string(r.Body))
	for _, leak := range []string{"created_at", "auth.", "api_keys", "column", "sql", "pgx", "postgres", "error:", "goroutine", ".go:", "select", "list api keys"} {
		if strings.Contains(body, leak) {
			t.Errorf("500 body leaks %q: %s", leak, r.Body)
		}
	}
	// The log has the real error under the same trace id.
	logs := c.Logs.String()
	if !strings.Contains(logs, trace) || !strings.Contains(logs, "created_at") {
		t.Errorf("logs lack the error under trace id %s", trace)
	}
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func headerWithoutDate(h http.Header) string {
	c := h.Clone()
	c.Del("Date")
	var b strings.Builder
	_ = c.Write(&b)
	return b.String()
}

func flipChar(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func dbConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// assertNotInDatabase fails if needle appears in any text or bytea column
// of any table of the database.
func assertNotInDatabase(t *testing.T, url, needle string) {
	t.Helper()
	conn := dbConn(t, url)
	ctx := context.Background()
	rows, err := conn.Query(ctx, `
		SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	type tbl struct{ schema, name string }
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tbl, error) {
		var x tbl
		return x, r.Scan(&x.schema, &x.name)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		ident := pgx.Identifier{tb.schema, tb.name}.Sanitize()
		var found bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+ident+` x WHERE x::text LIKE '%' || $1 || '%')`, needle).Scan(&found); err != nil {
			t.Fatal(err)
		}
		if found {
			t.Errorf("%s.%s holds %q", tb.schema, tb.name, needle)
		}
	}
}

// TestRevocationReachesEveryReplica runs two complete deployments on one
// database. Each caches validated keys; a change made through one must be
// in force on the other by the time the change's response arrives.
func TestRevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	b := apptest.Start(t, apptest.Options{DatabaseURL: a.DatabaseURL})
	tn := a.NewTenant(t)
	victim := createKey(t, a, tn, map[string]any{"name": "victim", "scopes": []string{"api-keys:manage"}})
	key := victim["plainTextKey"].(string)
	for range 3 { // warm both replicas' caches
		a.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusOK)
		b.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusOK)
	}
	a.Do(t, "DELETE", keysPath(tn.ID)+"/"+victim["id"].(string), tn.Key, nil).Expect(t, http.StatusNoContent)
	b.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusUnauthorized)
	a.Do(t, "GET", keysPath(tn.ID), key, nil).Expect(t, http.StatusUnauthorized)

	// Tenant-wide changes too: deactivation through A's admin API.
	b.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	if _, err := a.Admin.SetTenantActive(context.Background(), &authv1.SetTenantActiveRequest{TenantId: tn.ID, Active: false}); err != nil {
		t.Fatal(err)
	}
	b.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusUnauthorized)
	if _, err := a.Admin.SetTenantActive(context.Background(), &authv1.SetTenantActiveRequest{TenantId: tn.ID, Active: true}); err != nil {
		t.Fatal(err)
	}
	b.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	if _, err := a.Admin.SetTenantFeature(context.Background(), &authv1.SetTenantFeatureRequest{TenantId: tn.ID, Feature: "api-access:enabled"}); err != nil {
		t.Fatal(err)
	}
	b.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusUnauthorized)
}

// keyExpiring makes a key as an operator with the scopes, expiring at at.
func keyExpiring(t *testing.T, c *apptest.Cluster, tenantID string, at time.Time, scopes ...string) string {
	t.Helper()
	resp, err := c.Admin.CreateKey(context.Background(), &authv1.CreateKeyRequest{
		TenantId: tenantID, Name: "expiring", Scopes: scopes, ExpiresAt: timestamppb.New(at)})
	if err != nil {
		t.Fatal(err)
	}
	apptest.RegisterSecret(resp.GetApiKey().GetPlainTextKey())
	return resp.GetApiKey().GetPlainTextKey()
}

// TestAPIKeyCannotOutliveItsCreator: a key that expires creates only keys
// that expire no later than it does; an omitted or later expiresAt is a
// 400 under ExpiresAt. The expiry is read from the creator's own row, so a
// header naming another key changes nothing; the admin command is free.
func TestAPIKeyCannotOutliveItsCreator(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	expires := time.Now().Add(3 * time.Minute).UTC().Truncate(time.Second)
	short := keyExpiring(t, c, tn.ID, expires, "api-keys:manage", "contacts:view")
	stamp := func(at time.Time) string { return at.Format(time.RFC3339Nano) }
	body := func(expiresAt ...string) map[string]any {
		b := map[string]any{"name": "copy", "scopes": []string{"api-keys:manage", "contacts:view"}}
		if len(expiresAt) > 0 {
			b["expiresAt"] = expiresAt[0]
		}
		return b
	}
	refused := func(r *apptest.Response, fragment string) {
		t.Helper()
		r.Expect(t, http.StatusBadRequest)
		e := errorsOf(t, r)
		if len(e) != 1 || len(e["ExpiresAt"]) != 1 || !strings.Contains(e["ExpiresAt"][0], fragment) || !strings.Contains(e["ExpiresAt"][0], stamp(expires)) {
			t.Errorf("errors = %v, want one ExpiresAt message with %q and the creator's expiry %s", e, fragment, stamp(expires))
		}
	}
	refused(c.Do(t, "POST", keysPath(tn.ID), short, body()), "is required")
	refused(c.Do(t, "POST", keysPath(tn.ID), short, body(stamp(expires.Add(time.Second)))), "no later than")
	refused(c.Do(t, "POST", keysPath(tn.ID), short, body(stamp(expires.Add(time.Microsecond)))), "no later than")
	refused(c.Do(t, "POST", keysPath(tn.ID), short, body(stamp(expires.AddDate(10, 0, 0)))), "no later than")
	// Headers that look like the principal's never reach the service: the
	// creator is still the short key.
	var items []map[string]any
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	var forever string
	for _, it := range items {
		if it["expiresAt"] == nil {
			forever = it["id"].(string)
		}
	}
	refused(c.Do(t, "POST", keysPath(tn.ID), short, body(), "X-Almoner-Key-Id", forever, "Grpc-Metadata-X-Almoner-Key-Id", forever), "is required")
	// Nothing was created by any of them.
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	if len(items) != 2 {
		t.Fatalf("refused requests created keys: %d listed", len(items))
	}

	// At the creator's expiry or before: created, and the child is bound
	// in turn by its own expiry.
	same := createKeyWith(t, c, tn.ID, short, body(stamp(expires)))
	if same["expiresAt"] != stamp(expires) {
		t.Errorf("expiresAt = %v, want %s", same["expiresAt"], stamp(expires))
	}
	earlier := expires.Add(-time.Minute)
	child := createKeyWith(t, c, tn.ID, short, body(stamp(earlier)))["plainTextKey"].(string)
	r := c.Do(t, "POST", keysPath(tn.ID), child, body(stamp(expires))).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["ExpiresAt"]) != 1 || !strings.Contains(e["ExpiresAt"][0], stamp(earlier)) {
		t.Errorf("grandchild past its creator: errors = %v, want the child's expiry %s", e, stamp(earlier))
	}
	createKeyWith(t, c, tn.ID, child, body(stamp(earlier)))

	// A key without expiry still creates keys without expiry, and the
	// admin command is held to nothing of this.
	createKey(t, c, tn, body())
	if _, err := c.Admin.CreateKey(context.Background(), &authv1.CreateKeyRequest{TenantId: tn.ID, Name: "operator", Scopes: []string{"contacts:view"}}); err != nil {
		t.Errorf("admin key without expiry: %v", err)
	}
}

func createKeyWith(t *testing.T, c *apptest.Cluster, tenantID, key string, body any) map[string]any {
	t.Helper()
	return c.Do(t, "POST", keysPath(tenantID), key, body).Expect(t, http.StatusCreated).Map(t)
}

// TestRevokeNeedsEveryScopeOfTheTarget: a key with api-keys:manage and
// contacts:view cannot revoke the tenant's all-scope key (403 naming the
// first scope it lacks, in catalog order), and the target keeps working;
// it may revoke keys whose scopes it holds, itself included.
func TestRevokeNeedsEveryScopeOfTheTarget(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	narrow := c.NewKey(t, tn.ID, "api-keys:manage", "contacts:view")
	var items []map[string]any
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	var all, self map[string]any
	for _, it := range items {
		if len(it["scopes"].([]any)) > 2 {
			all = it
		} else {
			self = it
		}
	}
	if all == nil || self == nil {
		t.Fatalf("keys = %v", items)
	}
	var missing string
	for _, s := range all["scopes"].([]any) {
		if s != "api-keys:manage" && s != "contacts:view" {
			missing = s.(string)
			break
		}
	}
	r := c.Do(t, "DELETE", keysPath(tn.ID)+"/"+all["id"].(string), narrow, nil).Expect(t, http.StatusForbidden)
	if p := r.Map(t); p["title"] != "Missing required permission: "+missing || p["type"] != "/errors/forbidden" {
		t.Errorf("problem = %v, want the missing %s", p, missing)
	}
	// One scope short is enough to be refused.
	almost := c.NewKey(t, tn.ID, "api-keys:manage", "contacts:view", "contacts:edit")
	r = c.Do(t, "DELETE", keysPath(tn.ID)+"/"+idOfKey(t, c, tn, almost), narrow, nil).Expect(t, http.StatusForbidden)
	if title := r.Map(t)["title"]; title != "Missing required permission: contacts:edit" {
		t.Errorf("title = %v", title)
	}
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	c.Do(t, "GET", keysPath(tn.ID), almost, nil).Expect(t, http.StatusOK)

	// Unknown ids are still 404, whatever the scopes.
	c.Do(t, "DELETE", keysPath(tn.ID)+"/0190a4d6-0000-7000-8000-000000000000", narrow, nil).Expect(t, http.StatusNotFound)

	// Keys within its scopes it may revoke, itself last.
	viewer := createKeyWith(t, c, tn.ID, narrow, map[string]any{"name": "viewer", "scopes": []string{"contacts:view"}})
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+viewer["id"].(string), narrow, nil).Expect(t, http.StatusNoContent)
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+self["id"].(string), narrow, nil).Expect(t, http.StatusNoContent)
	c.Do(t, "GET", keysPath(tn.ID), narrow, nil).Expect(t, http.StatusUnauthorized)
	// The broad key revokes the narrower one it could not be revoked by.
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+idOfKey(t, c, tn, almost), tn.Key, nil).Expect(t, http.StatusNoContent)
}

// idOfKey finds the id of the key whose plain text is key in the tenant's
// list, by its prefix.
func idOfKey(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, key string) string {
	t.Helper()
	var items []map[string]any
	c.Do(t, "GET", keysPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &items)
	for _, it := range items {
		if strings.HasPrefix(key, it["keyPrefix"].(string)+"_") {
			return it["id"].(string)
		}
	}
	t.Fatalf("no key with the prefix of %.20s listed", key)
	return ""
}
