package impersonation

import (
	"cmp"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/migrations"
	"github.com/almoner/almoner/services/auth/store"
)

// TestMain fails the suite when a sweeper a test ran is still running
// once the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sweepCase is one open impersonation: its expiry and its tenant's grant
// relative to the sweep's now (no grant row when grant is nil).
type sweepCase struct {
	name    string
	expires time.Duration
	grant   *time.Duration
	// role is the operator's platform role ("" for none), member the
	// user's membership status, tenantOff a deactivated tenant.
	role, member string
	tenantOff    bool
	// reason is the end reason the sweep gives it; "" when it stays open.
	reason string
}

// TestSweepImpersonations: one sweep ends each impersonation that no
// longer holds, with the reason a request would find, and exactly one
// impersonation.deleted row each and a move of the validation epoch; a
// second sweep writes nothing; one that holds is untouched.
func TestSweepImpersonations(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	hour, past := time.Hour, -time.Minute
	cases := []sweepCase{
		{name: "holds", expires: 10 * time.Minute, grant: &hour},
		{name: "expired", expires: -time.Second, grant: &hour, reason: store.EndExpired},
		{name: "expires at the instant", grant: &hour, reason: store.EndExpired},
		{name: "expired after the grant ran out", expires: -time.Second, grant: &past, reason: store.EndExpired},
		{name: "grant ran out", expires: 10 * time.Minute, grant: &past, reason: store.EndGrantWithdrawn},
		{name: "no grant", expires: 10 * time.Minute, reason: store.EndGrantWithdrawn},
		{name: "operator removed", expires: 10 * time.Minute, grant: &hour, role: "-", reason: store.EndOperatorRemoved},
		{name: "user deactivated", expires: 10 * time.Minute, grant: &hour, member: "deactivated", reason: store.EndUserDeactivated},
		{name: "tenant deactivated", expires: 10 * time.Minute, grant: &hour, tenantOff: true, reason: store.EndUserDeactivated},
	}
	ids := make([]uuid.UUID, len(cases))
	for i, tc := range cases {
		ids[i] = seedImpersonation(t, pool, now, tc)
	}
	st := store.New(pool)
	w := NewSweeper(Deps{Store: st, Now: func() time.Time { return now }}, 0, slog.New(slog.DiscardHandler))
	epoch := readEpoch(t, pool)
	if n, err := w.Sweep(ctx); err != nil || n != len(cases)-1 {
		t.Fatalf("first sweep: ended %d, %v; want %d", n, err, len(cases)-1)
	}
	if after := readEpoch(t, pool); after <= epoch {
		t.Errorf("validation epoch %d after the sweep, %d before: not moved", after, epoch)
	}
	if n, err := w.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep: ended %d, %v; want 0", n, err)
	}
	for i, tc := range cases {
		checkSwept(t, pool, ids[i], tc)
	}
}

// checkSwept checks the impersonation id ended with tc.reason (or is open
// when it is "") and has one deleted audit row when ended, none otherwise.
func checkSwept(t *testing.T, pool *pgxpool.Pool, id uuid.UUID, tc sweepCase) {
	t.Helper()
	var reason string
	var deleted int
	var endReason *string
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(end_reason, ''),
		(SELECT count(*) FROM audit.events WHERE entity_type = $2 AND entity_id = $3 AND event = 'impersonation.deleted'),
		(SELECT changes->'endReason'->>'new' FROM audit.events WHERE entity_type = $2 AND entity_id = $3 AND event = 'impersonation.deleted')
		FROM auth.impersonations WHERE id = $1`, id, store.ImpersonationEntity, id.String()).Scan(&reason, &deleted, &endReason); err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	want := 0
	if tc.reason != "" {
		want = 1
	}
	if reason != tc.reason || deleted != want {
		t.Errorf("%s: end reason %q with %d deleted events, want %q with %d", tc.name, reason, deleted, tc.reason, want)
	}
	if want == 1 && (endReason == nil || *endReason != tc.reason) {
		t.Errorf("%s: deleted event's endReason %v, want %q", tc.name, endReason, tc.reason)
	}
}

// seedImpersonation inserts a tenant (with tc's grant), an operator with
// a session, a member, and the operator's open impersonation of them, as
// tc says.
func seedImpersonation(t *testing.T, pool *pgxpool.Pool, now time.Time, tc sweepCase) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	tenant, operator, user, session, id := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	var role *string
	if tc.role != "-" {
		role = new("support")
	}
	member := cmp.Or(tc.member, "active")
	stmts := []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO auth.tenants (id, name, slug, active) VALUES ($1, 'T', $2, $3)`, []any{tenant, tenant.String(), !tc.tenantOff}},
		{`INSERT INTO auth.users (id, email, platform_role) VALUES ($1, $2, $3)`, []any{operator, operator.String() + "@op.example.org", role}},
		{`INSERT INTO auth.users (id, email) VALUES ($1, $2)`, []any{user, user.String() + "@example.org"}},
		{`INSERT INTO auth.memberships (tenant_id, user_id, role, status) VALUES ($1, $2, 'admin', $3)`, []any{tenant, user, member}},
		{`INSERT INTO auth.sessions (id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)`, []any{session, operator, session[:], now.Add(time.Hour)}},
		{`INSERT INTO auth.impersonations (tenant_id, id, user_id, operator_id, session_id, reason, expires_at)
			VALUES ($1, $2, $3, $4, $5, 'ticket 1234: checking', $6)`, []any{tenant, id, user, operator, session, now.Add(tc.expires)}},
	}
	if tc.grant != nil {
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{`INSERT INTO auth.support_access (tenant_id, until, granted_by) VALUES ($1, $2, 'user:x')`, []any{tenant, now.Add(*tc.grant)}})
	}
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s.sql, s.args...); err != nil {
			t.Fatalf("%s: seed: %v", tc.name, err)
		}
	}
	return id
}

func readEpoch(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var e int64
	if err := pool.QueryRow(context.Background(), `SELECT epoch FROM auth.validation_epoch`).Scan(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSweeperStops: Run returns once its context ends (goleak checks no
// ticker goroutine is left).
func TestSweeperStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := NewSweeper(Deps{Now: time.Now}, time.Hour, slog.New(slog.DiscardHandler))
	go func() { w.Run(ctx); close(done) }()
	cancel()
	<-done
}
