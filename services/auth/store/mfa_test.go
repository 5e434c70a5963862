package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/auth/migrations"
)

// TestMfaSteps: enabling TOTP notes the confirming step; a step is then
// accepted only when later than the last one, so two uses of one code
// (sequential or racing) pass once; turning a factor off that was off
// changes nothing, while turning the last one off drops the recovery
// codes and trusted devices.
func TestMfaSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, audit.Migrations(), migrations.Set()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool)
	user := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO auth.users (id, email) VALUES ($1, 'steps@example.org')`, user); err != nil {
		t.Fatal(err)
	}
	log := LogEntry{UserID: user, Action: "test"}
	if err := s.StartTotp(ctx, user, []byte("sealed"), log); err != nil {
		t.Fatal(err)
	}
	first, err := s.EnableTotp(ctx, Enabling{UserID: user, Log: log, Recovery: [][]byte{[]byte("r1"), []byte("r2")},
		Check: func(pgx.Tx, MfaState) (int64, error) { return 100, nil }})
	if err != nil || !first {
		t.Fatalf("enable: first %v, %v", first, err)
	}
	for _, tc := range []struct {
		step int64
		want error
	}{{100, ErrCodeInvalid}, {99, ErrCodeInvalid}, {101, nil}, {101, ErrCodeInvalid}} {
		if err := s.UseTotpStep(ctx, user, tc.step); !errors.Is(err, tc.want) {
			t.Errorf("step %d: %v, want %v", tc.step, err, tc.want)
		}
	}
	// Two requests with one code of a new step: one passes.
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- s.UseTotpStep(ctx, user, 102) }()
	}
	if a, b := <-errs, <-errs; (a == nil) == (b == nil) {
		t.Errorf("racing uses of one step: %v and %v", a, b)
	}

	now := time.Now()
	if err := s.DisableFactor(ctx, user, FactorEmail, log); err != nil {
		t.Fatal(err)
	}
	if m, err := s.MfaState(ctx, user, now); err != nil || !m.TotpEnabled || m.RecoveryLeft != 2 {
		t.Errorf("after turning off email, which was off: %+v, %v", m, err)
	}
	if err := s.DisableFactor(ctx, user, FactorTotp, log); err != nil {
		t.Fatal(err)
	}
	if m, err := s.MfaState(ctx, user, now); err != nil || m.HasFactor() || m.RecoveryLeft != 0 || m.TotpSecret != nil {
		t.Errorf("after turning off TOTP: %+v, %v", m, err)
	}
	var logged int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM auth.security_log WHERE user_id = $1`, user).Scan(&logged); err != nil || logged != 3 {
		t.Errorf("%d security log rows (%v), want 3: start, enable, TOTP off", logged, err)
	}
}
