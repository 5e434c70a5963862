package store

import (
	"context"
	"testing"

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
