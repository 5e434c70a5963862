package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// burst sends n requests at once (released together once every goroutine
// is ready) and returns each response; request(i) gives the i-th path and
// JSON body.
func burst(t *testing.T, c *apptest.Cluster, n int, method, key string, request func(i int) (path string, body any)) []*apptest.Response {
	t.Helper()
	out := make([]*apptest.Response, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		path, body := request(i)
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, err := http.NewRequestWithContext(t.Context(), method, c.URL+path, bytes.NewReader(b))
			if err != nil {
				errs[i] = err
				ready.Done()
				return
			}
			req.Header.Set("X-Api-Key", key)
			req.Header.Set("Content-Type", "application/json")
			ready.Done()
			<-start
			resp, err := c.HTTP.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer func() { _ = resp.Body.Close() }()
			rb, err := io.ReadAll(resp.Body)
			out[i], errs[i] = &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: rb}, err
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// countStatuses tallies the statuses of rs; anything but want and 400 fails.
func countStatuses(t *testing.T, rs []*apptest.Response, want int) (ok, refused int) {
	t.Helper()
	for _, r := range rs {
		switch r.Status {
		case want:
			ok++
		case http.StatusBadRequest:
			refused++
		default:
			t.Errorf("status %d: %s", r.Status, r.Body)
		}
	}
	return ok, refused
}

// expectLimitRule checks r is the 400 business rule of a cap: one message
// under "" with code, naming the cap n.
func expectLimitRule(t *testing.T, r *apptest.Response, code, what string, n int) {
	t.Helper()
	r.Expect(t, http.StatusBadRequest)
	e := errorsOf(t, r)
	want := fmt.Sprintf("%s: The tenant already has %d active %s, the most it may have;", code, n, what)
	if len(e) != 1 || len(e[""]) != 1 || !strings.HasPrefix(e[""][0], want) {
		t.Errorf("errors = %v, want one message under \"\" starting %q", e, want)
	}
}

func activeKeys(t *testing.T, dbURL, tenantID string) int {
	t.Helper()
	var n int
	if err := dbConn(t, dbURL).QueryRow(context.Background(), `SELECT count(*) FROM auth.api_keys
		WHERE tenant_id = $1 AND active AND deleted_at IS NULL AND (expires_at IS NULL OR expires_at > now())`, tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAPIKeyLimit: a tenant holds at most ALMONER_API_KEY_LIMIT active keys
// (here 5); expired and revoked keys do not count, the admin command is not
// held to it, and concurrent creations at the limit minus one let exactly
// one through.
func TestAPIKeyLimit(t *testing.T) {
	t.Parallel()
	const limit = 5
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_API_KEY_LIMIT": fmt.Sprint(limit)}})
	tn := c.NewTenant(t) // its key is the first of five
	body := func(name string) map[string]any {
		return map[string]any{"name": name, "scopes": []string{"contacts:view"}}
	}
	var ids []string
	for i := range 3 {
		ids = append(ids, createKey(t, c, tn, body(fmt.Sprint("k", i)))["id"].(string))
	}
	// A key that expires later: until then it counts. (It expired 1.5 s
	// after its creation, and a loaded machine took longer than that to
	// reach the next request.)
	expiring := createKey(t, c, tn, map[string]any{"name": "short", "scopes": []string{"contacts:view"},
		"expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)})
	r := c.Do(t, "POST", keysPath(tn.ID), tn.Key, body("sixth"))
	expectLimitRule(t, r, "ApiKey.LimitReached", "API keys", limit)

	// An expired key can authenticate no more, so it no longer counts. Its
	// hour passes in the database, whose clock the count reads.
	if _, err := dbConn(t, c.DatabaseURL).Exec(context.Background(), `UPDATE auth.api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`,
		expiring["id"].(string)); err != nil {
		t.Fatal(err)
	}
	createKey(t, c, tn, body("after expiry"))
	expectLimitRule(t, c.Do(t, "POST", keysPath(tn.ID), tn.Key, body("over")), "ApiKey.LimitReached", "API keys", limit)

	// Revoking frees a place.
	c.Do(t, "DELETE", keysPath(tn.ID)+"/"+ids[0], tn.Key, nil).Expect(t, http.StatusNoContent)
	createKey(t, c, tn, body("after revoke"))
	expectLimitRule(t, c.Do(t, "POST", keysPath(tn.ID), tn.Key, body("over")), "ApiKey.LimitReached", "API keys", limit)

	// The operator's command is how a tenant at its limit gets a key anyway.
	c.NewKey(t, tn.ID, "all")
	if n := activeKeys(t, c.DatabaseURL, tn.ID); n != limit+1 {
		t.Errorf("active keys = %d, want %d", n, limit+1)
	}

	// Another tenant is not affected by this one's keys.
	other := c.NewTenant(t)
	createKey(t, c, other, body("elsewhere"))

	// Race: at limit-1, twelve creations at once; exactly one may pass.
	racer := c.NewTenant(t)
	for i := range limit - 2 {
		createKey(t, c, racer, body(fmt.Sprint("r", i)))
	}
	rs := burst(t, c, 12, "POST", racer.Key, func(i int) (string, any) { return keysPath(racer.ID), body(fmt.Sprint("burst", i)) })
	ok, refused := countStatuses(t, rs, http.StatusCreated)
	if ok != 1 || refused != 11 {
		t.Errorf("concurrent creations at limit-1: %d created, %d refused; want 1 and 11", ok, refused)
	}
	for _, r := range rs {
		if r.Status == http.StatusBadRequest {
			expectLimitRule(t, r, "ApiKey.LimitReached", "API keys", limit)
		}
	}
	if n := activeKeys(t, c.DatabaseURL, racer.ID); n != limit {
		t.Errorf("active keys after the burst = %d, want %d", n, limit)
	}
}

func activeEndpoints(t *testing.T, dbURL, tenantID string) int {
	t.Helper()
	var n int
	if err := dbConn(t, dbURL).QueryRow(context.Background(), `SELECT count(*) FROM webhooks.endpoints
		WHERE tenant_id = $1 AND active AND deleted_at IS NULL`, tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWebhookEndpointLimit: a tenant has at most
// ALMONER_WEBHOOK_ENDPOINT_LIMIT active endpoints (here 3). Registering one
// more or switching an inactive one back on past it is a 400; deactivated
// and deleted endpoints do not count; concurrent registrations and
// re-activations at the limit minus one let exactly one through.
func TestWebhookEndpointLimit(t *testing.T) {
	t.Parallel()
	const limit = 3
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{
		"ALMONER_WEBHOOK_SECRET_KEY": testSecretKey, "ALMONER_WEBHOOK_ENDPOINT_LIMIT": fmt.Sprint(limit)}})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	hook := func(name string, active ...bool) map[string]any {
		b := map[string]any{"name": name, "url": "https://8.8.8.8/" + name, "eventTypes": []string{"contact.created"}}
		if len(active) > 0 {
			b["active"] = active[0]
		}
		return b
	}
	const what = "webhook endpoints"
	var ids []string
	for i := range limit {
		ids = append(ids, c.Do(t, "POST", whPath(tn.ID), tn.Key, hook(fmt.Sprint("h", i))).Expect(t, http.StatusCreated).Map(t)["id"].(string))
	}
	expectLimitRule(t, c.Do(t, "POST", whPath(tn.ID), tn.Key, hook("over")), "Webhook.LimitReached", what, limit)

	// Switched off, an endpoint frees its place; switching it back on while
	// the place is taken is refused, and leaves it off.
	c.Do(t, "PUT", whPath(tn.ID, "/", ids[0]), tn.Key, hook("h0", false)).Expect(t, http.StatusOK)
	fourth := c.Do(t, "POST", whPath(tn.ID), tn.Key, hook("h3")).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	expectLimitRule(t, c.Do(t, "PUT", whPath(tn.ID, "/", ids[0]), tn.Key, hook("h0", true)), "Webhook.LimitReached", what, limit)
	expectLimitRule(t, c.Do(t, "PUT", whPath(tn.ID, "/", ids[0]), tn.Key, hook("h0")), "Webhook.LimitReached", what, limit)
	// An inactive endpoint can still be edited while the tenant is at its
	// limit, and an active one too.
	c.Do(t, "PUT", whPath(tn.ID, "/", ids[0]), tn.Key, hook("h0-renamed", false)).Expect(t, http.StatusOK)
	c.Do(t, "PUT", whPath(tn.ID, "/", ids[1]), tn.Key, hook("h1-renamed")).Expect(t, http.StatusOK)
	// Deleting frees a place for the switched-off one.
	c.Do(t, "DELETE", whPath(tn.ID, "/", fourth), tn.Key, nil).Expect(t, http.StatusNoContent)
	up := c.Do(t, "PUT", whPath(tn.ID, "/", ids[0]), tn.Key, hook("h0", true)).Expect(t, http.StatusOK).Map(t)
	if up["active"] != true {
		t.Errorf("re-activated endpoint = %v", up)
	}
	if n := activeEndpoints(t, c.DatabaseURL, tn.ID); n != limit {
		t.Errorf("active endpoints = %d, want %d", n, limit)
	}

	// Race: at limit-1, twelve registrations at once; exactly one passes.
	racer := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	for i := range limit - 1 {
		c.Do(t, "POST", whPath(racer.ID), racer.Key, hook(fmt.Sprint("r", i))).Expect(t, http.StatusCreated)
	}
	rs := burst(t, c, 12, "POST", racer.Key, func(i int) (string, any) { return whPath(racer.ID), hook(fmt.Sprint("burst", i)) })
	if ok, refused := countStatuses(t, rs, http.StatusCreated); ok != 1 || refused != 11 {
		t.Errorf("concurrent registrations at limit-1: %d created, %d refused; want 1 and 11", ok, refused)
	}
	if n := activeEndpoints(t, c.DatabaseURL, racer.ID); n != limit {
		t.Errorf("active endpoints after the burst = %d, want %d", n, limit)
	}

	// Race: at limit-1 again, switching six inactive endpoints back on at
	// once; exactly one passes. The spares are registered one at a time and
	// switched off at once, so the tenant never passes its limit meanwhile.
	racer2 := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	for i := range limit - 1 {
		c.Do(t, "POST", whPath(racer2.ID), racer2.Key, hook(fmt.Sprint("s", i))).Expect(t, http.StatusCreated)
	}
	var off []string
	for i := range 6 {
		id := c.Do(t, "POST", whPath(racer2.ID), racer2.Key, hook(fmt.Sprint("off", i))).Expect(t, http.StatusCreated).Map(t)["id"].(string)
		c.Do(t, "PUT", whPath(racer2.ID, "/", id), racer2.Key, hook(fmt.Sprint("off", i), false)).Expect(t, http.StatusOK)
		off = append(off, id)
	}
	rs = burst(t, c, len(off), "PUT", racer2.Key, func(i int) (string, any) {
		return whPath(racer2.ID, "/", off[i]), hook(fmt.Sprint("off", i), true)
	})
	if ok, refused := countStatuses(t, rs, http.StatusOK); ok != 1 || refused != len(off)-1 {
		t.Errorf("concurrent re-activations at limit-1: %d switched on, %d refused; want 1 and %d", ok, refused, len(off)-1)
	}
	if n := activeEndpoints(t, c.DatabaseURL, racer2.ID); n != limit {
		t.Errorf("active endpoints after the re-activations = %d, want %d", n, limit)
	}
}
