package store

import (
	"context"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/migrations"
)

// TestTenantChangesMoveTheEpoch: every tenant field a validation carries
// to the services (active, features, default currency) moves the
// validation epoch when it changes, so no gateway keeps serving a cached
// principal with the old value; an update that changes nothing does not.
func TestTenantChangesMoveTheEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)
	tn, err := s.CreateTenant(ctx, Tenant{Name: "T", Slug: "t", Features: []string{"api-access:enabled"}, DefaultCurrency: "USD"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	epoch := func() int64 {
		t.Helper()
		e, err := s.Epoch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name   string
		change func(*Tenant)
		moves  bool
	}{
		{"default currency", func(t *Tenant) { t.DefaultCurrency = "EUR" }, true},
		{"features", func(t *Tenant) { t.Features = append(t.Features, "webhooks:enabled") }, true},
		{"active", func(t *Tenant) { t.Active = false }, true},
		{"nothing", func(*Tenant) {}, false},
	} {
		before := epoch()
		out, err := s.UpdateTenant(ctx, tn.ID, "test", tc.change)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if moved := epoch() != before; moved != tc.moves {
			t.Errorf("%s: epoch moved %v, want %v", tc.name, moved, tc.moves)
		}
		if tc.name == "default currency" && out.DefaultCurrency != "EUR" {
			t.Errorf("default currency after the update = %q", out.DefaultCurrency)
		}
	}
	cred, err := s.CredentialByLookup(ctx, "none")
	if err == nil {
		t.Errorf("unknown lookup: %+v", cred)
	}
	k, err := s.CreateKey(ctx, testKey(tn.ID), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cred, err = s.CredentialByLookup(ctx, k.LookupID); err != nil || cred.TenantCurrency != "EUR" {
		t.Errorf("credential = %+v, %v; want the tenant's currency EUR", cred, err)
	}
}

// TestEventsSince: events_since moves to the clock each time the tenant
// begins to fire events (active with webhooks:enabled), from creation or a
// later change, and stays put on every other change.
func TestEventsSince(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)

	born, err := s.CreateTenant(ctx, Tenant{Name: "B", Slug: "b", Features: []string{"webhooks:enabled"}, DefaultCurrency: "USD"}, "test")
	if err != nil || born.EventsSince == nil {
		t.Fatalf("created firing: events_since %v, %v; want set", born.EventsSince, err)
	}
	tn, err := s.CreateTenant(ctx, Tenant{Name: "T", Slug: "t", Features: []string{"api-access:enabled"}, DefaultCurrency: "USD"}, "test")
	if err != nil || tn.EventsSince != nil {
		t.Fatalf("created without webhooks: events_since %v, %v; want none", tn.EventsSince, err)
	}
	webhooks := func(on bool) func(*Tenant) {
		return func(t *Tenant) {
			t.Features = []string{"api-access:enabled"}
			if on {
				t.Features = append(t.Features, "webhooks:enabled")
			}
		}
	}
	var last time.Time
	for _, tc := range []struct {
		name   string
		change func(*Tenant)
		moves  bool
	}{
		{"webhooks on", webhooks(true), true},
		{"currency", func(t *Tenant) { t.DefaultCurrency = "EUR" }, false},
		{"webhooks off", webhooks(false), false},
		{"webhooks on again", webhooks(true), true},
		{"deactivated", func(t *Tenant) { t.Active = false }, false},
		{"activated", func(t *Tenant) { t.Active = true }, true},
		{"webhooks off, inactive", func(t *Tenant) { t.Active = false; webhooks(false)(t) }, false},
		{"webhooks on while inactive", webhooks(true), false},
		{"activated with webhooks", func(t *Tenant) { t.Active = true }, true},
	} {
		out, err := s.UpdateTenant(ctx, tn.ID, "test", tc.change)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out.EventsSince == nil {
			if tc.moves || !last.IsZero() {
				t.Fatalf("%s: events_since unset", tc.name)
			}
			continue
		}
		if moved := !out.EventsSince.Equal(last); moved != tc.moves {
			t.Errorf("%s: events_since moved %v (%v → %v), want %v", tc.name, moved, last, *out.EventsSince, tc.moves)
		}
		if tc.moves && !out.EventsSince.After(last) {
			t.Errorf("%s: events_since %v not after %v", tc.name, *out.EventsSince, last)
		}
		last = *out.EventsSince
		if got, err := s.GetTenant(ctx, tn.ID); err != nil || got.EventsSince == nil || !got.EventsSince.Equal(last) {
			t.Errorf("%s: read back %v, %v", tc.name, got.EventsSince, err)
		}
	}
}
