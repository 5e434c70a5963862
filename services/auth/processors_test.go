package auth

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/secretbox"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/keyformat"
)

// Keys shaped like Stripe's (fake: no account has them).
const (
	testKey       = "sk_test_51PqrStUvWxYz0123456789abcdWXYZ"
	testKey2      = "rk_test_51AbCdEfGh9876543210zyxwQRST"
	liveKey       = "sk_live_51PqrStUvWxYz0123456789abcdLIVE"
	webhookSecret = "whsec_0123456789abcdefghijklmnopqrstuv"
)

// logBuffer collects a service's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fixture is an auth service of one environment on a fresh database.
type fixture struct {
	s     *Service
	admin *adminServer
	creds *processorServer
	pool  *pgxpool.Pool
	logs  *logBuffer
}

func newFixture(t *testing.T, environment string) *fixture {
	t.Helper()
	pool, err := db.Open(context.Background(), testdb.New(t, Migrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newFixtureOn(t, pool, environment, secretbox.NewKey())
}

// newFixtureOn is an auth service on pool sealing with key (base64), as a
// second process on the same database would be.
func newFixtureOn(t *testing.T, pool *pgxpool.Pool, environment, key string) *fixture {
	t.Helper()
	raw, err := secretbox.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := secretbox.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	// No gateway caches here to wait for.
	cfg.Environment, cfg.KeyCacheWindow, cfg.Sealer = environment, 0, sl
	logs := &logBuffer{}
	s, err := New(pool, cfg, slog.New(slog.NewJSONHandler(io.MultiWriter(logs), nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, admin: &adminServer{s: s}, creds: &processorServer{s: s}, pool: pool, logs: logs}
}

func (f *fixture) tenant(t *testing.T, slug string) string {
	t.Helper()
	resp, err := f.admin.CreateTenant(context.Background(), &authv1.CreateTenantRequest{Name: "Tenant " + slug, Slug: slug})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTenant().GetId()
}

func (f *fixture) epoch(t *testing.T) int64 {
	t.Helper()
	e, err := f.s.store.Epoch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// wantKind fails the test unless err is an apperr of that kind.
func wantKind(t *testing.T, what string, err error, kind apperr.Kind) {
	t.Helper()
	_ = kindOf(t, what, err, kind)
}

// kindOf is wantKind for a test that goes on to read the error's fields.
func kindOf(t *testing.T, what string, err error, kind apperr.Kind) *apperr.Error {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Kind != kind {
		t.Fatalf("%s: err %v, want kind %d", what, err, kind)
	}
	return e
}

func TestTenantProcessorLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	tid := f.tenant(t, "friends")
	other := f.tenant(t, "others")

	got, err := f.admin.GetTenantProcessor(ctx, &authv1.GetTenantProcessorRequest{TenantId: tid})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.GetProcessor(); p.GetConfigured() || p.GetProvider() != "" || p.GetMode() != "" || p.GetTenantId() != tid {
		t.Errorf("before any set: %v", p)
	}
	creds, err := f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: tid})
	if err != nil || creds.GetConfigured() || creds.GetSecretKey() != "" || !creds.GetTenantActive() || creds.GetTenantId() != tid {
		t.Errorf("credentials before any set: %v, %v", creds, err)
	}

	before := f.epoch(t)
	set, err := f.admin.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: tid, Provider: "stripe", SecretKey: " " + testKey + "\n", WebhookSecret: webhookSecret})
	if err != nil {
		t.Fatal(err)
	}
	want := &authv1.TenantProcessor{TenantId: tid, Provider: "stripe", Mode: "test", Configured: true, KeyHint: "sk_test_…WXYZ"}
	if p := set.GetProcessor(); p.String() != want.String() {
		t.Errorf("set = %v, want %v", p, want)
	}
	if f.epoch(t) <= before {
		t.Error("setting a processor did not move the validation epoch: cached credentials would stay")
	}
	got, _ = f.admin.GetTenantProcessor(ctx, &authv1.GetTenantProcessorRequest{TenantId: tid})
	if got.GetProcessor().String() != want.String() {
		t.Errorf("get = %v, want %v", got.GetProcessor(), want)
	}

	// The orders service's view, by id and by slug: the keys in plain text.
	for _, req := range []*authv1.GetProcessorCredentialsRequest{{TenantId: tid}, {TenantSlug: "friends"}} {
		c, err := f.creds.GetProcessorCredentials(ctx, req)
		if err != nil {
			t.Fatalf("%v: %v", req, err)
		}
		if c.GetTenantId() != tid || !c.GetConfigured() || c.GetProvider() != "stripe" || c.GetMode() != "test" ||
			c.GetSecretKey() != testKey || c.GetWebhookSecret() != webhookSecret || !c.GetTenantActive() {
			t.Errorf("credentials %v = %v", req, c)
		}
	}
	if c, _ := f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantSlug: "others"}); c.GetTenantId() != other || c.GetConfigured() {
		t.Errorf("another tenant's credentials: %v", c)
	}

	// At rest: sealed, neither key nor any long part of it in the row.
	var keyBox, whBox []byte
	var hint string
	if err := f.pool.QueryRow(ctx, `SELECT secret_key_box, webhook_secret_box, key_hint FROM auth.tenant_processors WHERE tenant_id = $1`, tid).Scan(&keyBox, &whBox, &hint); err != nil {
		t.Fatal(err)
	}
	var row string
	if err := f.pool.QueryRow(ctx, `SELECT row_to_json(p)::text FROM auth.tenant_processors p WHERE tenant_id = $1`, tid).Scan(&row); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{testKey, webhookSecret} {
		tail := secret[8:]
		if bytes.Contains(keyBox, []byte(tail)) || bytes.Contains(whBox, []byte(tail)) || strings.Contains(row, tail) {
			t.Errorf("the stored row holds a secret in plain text: %s", row)
		}
	}
	if hint != "sk_test_…WXYZ" {
		t.Errorf("key_hint = %q", hint)
	}

	// Replacing: a restricted key; a deactivated tenant is reported.
	if _, err := f.admin.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: tid, Provider: "stripe", SecretKey: testKey2, WebhookSecret: webhookSecret + "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.SetTenantActive(ctx, &authv1.SetTenantActiveRequest{TenantId: tid, Active: false}); err != nil {
		t.Fatal(err)
	}
	c, err := f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: tid})
	if err != nil || c.GetSecretKey() != testKey2 || c.GetWebhookSecret() != webhookSecret+"2" || c.GetTenantActive() {
		t.Errorf("after replacing and deactivating: %v, %v", c, err)
	}

	before = f.epoch(t)
	cleared, err := f.admin.ClearTenantProcessor(ctx, &authv1.ClearTenantProcessorRequest{TenantId: tid})
	if err != nil {
		t.Fatal(err)
	}
	if p := cleared.GetProcessor(); p.GetConfigured() || p.GetProvider() != "" || p.GetMode() != "" || p.GetKeyHint() != "" || p.GetTenantId() != tid {
		t.Errorf("clear = %v", p)
	}
	if f.epoch(t) <= before {
		t.Error("clearing did not move the validation epoch")
	}
	c, err = f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantSlug: "friends"})
	if err != nil || c.GetConfigured() || c.GetSecretKey() != "" || c.GetWebhookSecret() != "" || c.GetProvider() != "" {
		t.Errorf("credentials after clear: %v, %v", c, err)
	}
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM auth.tenant_processors`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d processor rows after clear (%v)", n, err)
	}
	// Clearing again is fine and writes nothing.
	if _, err := f.admin.ClearTenantProcessor(ctx, &authv1.ClearTenantProcessorRequest{TenantId: tid}); err != nil {
		t.Fatal(err)
	}

	// One audit row per change, in order, none holding a secret.
	rows, err := f.pool.Query(ctx, `SELECT action, coalesce(changes::text, ''), actor, row_to_json(e)::text FROM audit.events e
		WHERE tenant_id = $1 AND entity_type = 'TenantProcessor' AND entity_id = $2 ORDER BY id`, tid, tid)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for rows.Next() {
		var action, changes, actor, whole string
		if err := rows.Scan(&action, &changes, &actor, &whole); err != nil {
			t.Fatal(err)
		}
		actions = append(actions, action)
		for _, secret := range []string{testKey, testKey2, webhookSecret} {
			if strings.Contains(whole, secret[8:]) {
				t.Errorf("audit row holds a secret: %s", whole)
			}
		}
		if action == "Updated" && (!strings.Contains(changes, `"keyHint": {"new": "rk_test_…QRST", "old": "sk_test_…WXYZ"}`) || !strings.Contains(changes, "updatedAt")) {
			t.Errorf("update's changes = %s", changes)
		}
		if actor != "system" {
			t.Errorf("actor = %s", actor)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(actions, ","); got != "Created,Updated,Deleted" {
		t.Errorf("audit actions = %s, want Created,Updated,Deleted", got)
	}
}

func TestTenantProcessorValidation(t *testing.T) {
	t.Parallel()
	sandbox := newFixture(t, keyformat.Sandbox)
	production := newFixtureOn(t, sandbox.pool, keyformat.Production, secretbox.NewKey())
	tid := sandbox.tenant(t, "valid")
	ctx := context.Background()
	cases := []struct {
		name  string
		f     *fixture
		req   *authv1.SetTenantProcessorRequest
		field string
		msg   string
	}{
		{"live key in sandbox", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: liveKey, WebhookSecret: webhookSecret},
			"SecretKey", "other mode: this sandbox deployment accepts only keys starting with sk_test_ or rk_test_"},
		{"test key in production", production, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: testKey, WebhookSecret: webhookSecret},
			"SecretKey", "this production deployment accepts only keys starting with sk_live_ or rk_live_"},
		{"publishable key", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: "pk_test_51PqrStUvWxYz0123456789", WebhookSecret: webhookSecret},
			"SecretKey", "must be a secret or restricted key starting with sk_test_ or rk_test_ (this deployment is sandbox)"},
		{"cut-off key", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: "sk_test_51Pq", WebhookSecret: webhookSecret},
			"SecretKey", "must be the whole key"},
		{"key with a space", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: "sk_test_51PqrStUv WxYz0123456789", WebhookSecret: webhookSecret},
			"SecretKey", "must be the whole key"},
		{"no key", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", WebhookSecret: webhookSecret},
			"SecretKey", "must not be empty"},
		{"other provider", sandbox, &authv1.SetTenantProcessorRequest{Provider: "paypal", SecretKey: testKey, WebhookSecret: webhookSecret},
			"Provider", "'Provider' must be 'stripe'."},
		{"no provider", sandbox, &authv1.SetTenantProcessorRequest{SecretKey: testKey, WebhookSecret: webhookSecret},
			"Provider", "'Provider' must be 'stripe'."},
		{"webhook secret without whsec_", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: testKey, WebhookSecret: "0123456789abcdefghijkl"},
			"WebhookSecret", "starting with whsec_"},
		{"short webhook secret", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: testKey, WebhookSecret: "whsec_abc"},
			"WebhookSecret", "must be the whole secret"},
		{"no webhook secret", sandbox, &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: testKey},
			"WebhookSecret", "must not be empty"},
	}
	for _, tc := range cases {
		tc.req.TenantId = tid
		_, err := tc.f.admin.SetTenantProcessor(ctx, tc.req)
		e := kindOf(t, tc.name, err, apperr.KindInvalid)
		found := false
		for _, v := range e.Violations {
			if v.Field == tc.field && strings.Contains(v.Message, tc.msg) {
				found = true
			}
			for _, secret := range []string{tc.req.GetSecretKey(), tc.req.GetWebhookSecret()} {
				if len(secret) > 14 && strings.Contains(v.Message, secret[8:]) {
					t.Errorf("%s: the message repeats a secret: %s", tc.name, v.Message)
				}
			}
		}
		if !found {
			t.Errorf("%s: violations %v, want %s: …%s…", tc.name, e.Violations, tc.field, tc.msg)
		}
	}
	var n int
	if err := sandbox.pool.QueryRow(ctx, `SELECT count(*) FROM auth.tenant_processors`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows written by invalid requests (%v)", n, err)
	}

	// Production takes live keys: mode live.
	resp, err := production.admin.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: tid, Provider: "stripe", SecretKey: liveKey, WebhookSecret: webhookSecret})
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.GetProcessor(); p.GetMode() != "live" || p.GetKeyHint() != "sk_live_…LIVE" {
		t.Errorf("production set = %v", p)
	}
}

func TestTenantProcessorNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	valid := &authv1.SetTenantProcessorRequest{Provider: "stripe", SecretKey: testKey, WebhookSecret: webhookSecret}
	for _, id := range []string{uuid.Must(uuid.NewV7()).String(), "not-a-uuid", ""} {
		req := &authv1.SetTenantProcessorRequest{TenantId: id, Provider: valid.Provider, SecretKey: valid.SecretKey, WebhookSecret: valid.WebhookSecret}
		_, err := f.admin.SetTenantProcessor(ctx, req)
		wantKind(t, "set "+id, err, apperr.KindNotFound)
		_, err = f.admin.GetTenantProcessor(ctx, &authv1.GetTenantProcessorRequest{TenantId: id})
		wantKind(t, "get "+id, err, apperr.KindNotFound)
		_, err = f.admin.ClearTenantProcessor(ctx, &authv1.ClearTenantProcessorRequest{TenantId: id})
		wantKind(t, "clear "+id, err, apperr.KindNotFound)
		if id != "" {
			_, err = f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: id})
			wantKind(t, "credentials "+id, err, apperr.KindNotFound)
		}
	}
	_, err := f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantSlug: "no-such-tenant"})
	wantKind(t, "credentials by unknown slug", err, apperr.KindNotFound)
	for _, req := range []*authv1.GetProcessorCredentialsRequest{{}, {TenantId: uuid.Must(uuid.NewV7()).String(), TenantSlug: "both"}} {
		_, err := f.creds.GetProcessorCredentials(ctx, req)
		if e := kindOf(t, "credentials with neither or both", err, apperr.KindInvalid); !strings.Contains(e.Violations[0].Message, "Exactly one") {
			t.Errorf("message = %v", e.Violations)
		}
	}
}

// TestProcessorKeysSealedElsewhere reads credentials in a process that
// holds another sealing key, and from a row whose box was copied from
// another tenant: both are errors with a log line, never "not configured"
// and never the wrong keys.
func TestProcessorKeysSealedElsewhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	a, b := f.tenant(t, "a"), f.tenant(t, "b")
	for _, id := range []string{a, b} {
		if _, err := f.admin.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: id, Provider: "stripe", SecretKey: testKey, WebhookSecret: webhookSecret}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Exec(ctx, `UPDATE auth.tenant_processors SET secret_key_box = (SELECT secret_key_box FROM auth.tenant_processors WHERE tenant_id = $1) WHERE tenant_id = $2`, a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: b}); err == nil {
		t.Error("a box copied from another tenant opened")
	} else if _, ok := apperr.As(err); ok {
		t.Errorf("a box copied from another tenant: %v, want an internal error", err)
	}

	elsewhere := newFixtureOn(t, f.pool, keyformat.Sandbox, secretbox.NewKey())
	resp, err := elsewhere.creds.GetProcessorCredentials(ctx, &authv1.GetProcessorCredentialsRequest{TenantId: a})
	if err == nil {
		t.Fatalf("credentials opened with another key: %v", resp)
	}
	if _, ok := apperr.As(err); ok {
		t.Errorf("another key: %v, want an internal error", err)
	}
	if log := elsewhere.logs.String(); !strings.Contains(log, "cannot be unsealed") || !strings.Contains(log, secretbox.KeyVar) || !strings.Contains(log, a) {
		t.Errorf("no log line naming the tenant and the key: %s", log)
	}
	// The operator's view still works: it needs no key.
	if got, err := elsewhere.admin.GetTenantProcessor(ctx, &authv1.GetTenantProcessorRequest{TenantId: a}); err != nil || !got.GetProcessor().GetConfigured() {
		t.Errorf("get with another key: %v, %v", got, err)
	}
}

// BenchmarkGetProcessorCredentials is the orders service's read on a cache
// miss: one primary-key join and two GCM opens.
func BenchmarkGetProcessorCredentials(b *testing.B) {
	pool, err := db.Open(context.Background(), testdb.New(b, Migrations()...))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	sl, _ := secretbox.New(make([]byte, secretbox.KeySize))
	cfg := DefaultConfig()
	cfg.KeyCacheWindow, cfg.Sealer = 0, sl
	s, err := New(pool, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	admin, creds := &adminServer{s: s}, &processorServer{s: s}
	ctx := context.Background()
	t, err := admin.CreateTenant(ctx, &authv1.CreateTenantRequest{Name: "Bench", Slug: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	id := t.GetTenant().GetId()
	if _, err := admin.SetTenantProcessor(ctx, &authv1.SetTenantProcessorRequest{TenantId: id, Provider: "stripe", SecretKey: testKey, WebhookSecret: webhookSecret}); err != nil {
		b.Fatal(err)
	}
	req := &authv1.GetProcessorCredentialsRequest{TenantId: id}
	b.ResetTimer()
	for b.Loop() {
		if c, err := creds.GetProcessorCredentials(ctx, req); err != nil || c.GetSecretKey() != testKey {
			b.Fatalf("%v, %v", c, err)
		}
	}
}
