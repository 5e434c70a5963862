package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

// TestKnownMethods: one read gives every token the tenant ever saved,
// detached ones included (they still name whose card it was), and what
// SavedMethod answers for each; a token never saved, or saved by another
// tenant, is absent.
func TestKnownMethods(t *testing.T) {
	t.Parallel()
	s, pool, tenant, _ := newStore(t)
	other := uuid.New()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO orders.payment_methods (tenant_id, id, contact_id, provider, mode, customer_id, type, brand, last4,
		exp_month, exp_year, is_default, detached_at) VALUES
		($1, 'pm_saved', 7, 'stripe', 'test', 'cus_7', 'card', 'visa', '4242', 12, 2030, true, NULL),
		($1, 'pm_detached', 8, 'stripe', 'test', 'cus_8', 'card', 'visa', '4242', 12, 2030, false, now()),
		($2, 'pm_elsewhere', 7, 'stripe', 'test', 'cus_x', 'card', 'visa', '4242', 12, 2030, true, NULL)`, tenant, other)
	if err != nil {
		t.Fatal(err)
	}
	known, err := s.KnownMethods(ctx, tenant, []string{"pm_saved", "pm_detached", "pm_never", "pm_elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if len(known) != 2 {
		t.Fatalf("known = %+v, want pm_saved and pm_detached", known)
	}
	saved, detached := known["pm_saved"], known["pm_detached"]
	if saved.ContactID != 7 || saved.CustomerID != "cus_7" || saved.Detached || !saved.SavedFor("stripe", 7) {
		t.Errorf("pm_saved = %+v", saved)
	}
	if saved.SavedFor("stripe", 8) || saved.SavedFor("test", 7) {
		t.Error("pm_saved is saved for another contact or provider")
	}
	if detached.ContactID != 8 || !detached.Detached || detached.SavedFor("stripe", 8) {
		t.Errorf("pm_detached = %+v, want contact 8, detached, not saved", detached)
	}
	for _, token := range []string{"pm_saved", "pm_detached"} {
		m, ok, err := s.SavedMethod(ctx, tenant, token, "stripe", known[token].ContactID)
		if err != nil || ok != known[token].SavedFor("stripe", known[token].ContactID) || (ok && m.CustomerID != known[token].CustomerID) {
			t.Errorf("%s: SavedMethod = %+v, %v, %v; KnownMethods says %+v", token, m, ok, err, known[token])
		}
	}
	if none, err := s.KnownMethods(ctx, tenant, nil); err != nil || len(none) != 0 {
		t.Errorf("no tokens: %v, %v", none, err)
	}
}
