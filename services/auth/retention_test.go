package auth

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/services/auth/keyformat"
)

// One housekeeping pass deletes what stopped working more than a day ago,
// the security log past its retention and sent mail past its own, and
// keeps everything else: live and recently ended sessions, a session an
// impersonation names, credentials that expired within the day, recent
// log entries and mail, failed and pending mail.
func TestHousekeepingPrunes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, keyformat.Sandbox)
	ctx := context.Background()
	tid := f.tenant(t, "housekeeping")
	acceptInvite(t, f, tid, "keep@example.org") // a live session
	var user string
	if err := f.pool.QueryRow(ctx, `SELECT id FROM auth.users WHERE email = 'keep@example.org'`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	f.s.now = func() time.Time { return now }
	day := 24 * time.Hour
	for _, q := range []string{
		`INSERT INTO auth.sessions (id, user_id, token_hash, expires_at, ended_at) VALUES
			(gen_random_uuid(), $1, 'ended 2 days ago', $2::timestamptz + interval '5 days', $2::timestamptz - interval '2 days'),
			(gen_random_uuid(), $1, 'expired 2 days ago', $2::timestamptz - interval '2 days', NULL),
			(gen_random_uuid(), $1, 'ended an hour ago', $2::timestamptz + interval '5 days', $2::timestamptz - interval '1 hour'),
			('00000000-0000-7000-8000-000000000001', $1, 'ended long ago, impersonated', $2::timestamptz - interval '30 days', $2::timestamptz - interval '30 days')`,
		`INSERT INTO auth.impersonations (tenant_id, id, user_id, operator_id, session_id, reason, started_at, expires_at, ended_at)
			VALUES ($3, gen_random_uuid(), $1, $1, '00000000-0000-7000-8000-000000000001', 'ticket 1',
			        $2::timestamptz - interval '31 days', $2::timestamptz - interval '30 days', $2::timestamptz - interval '30 days')`,
		`INSERT INTO auth.password_resets (id, user_id, token_hash, expires_at) VALUES
			(gen_random_uuid(), $1, 'reset expired 2 days ago', $2::timestamptz - interval '2 days'),
			(gen_random_uuid(), $1, 'reset expired an hour ago', $2::timestamptz - interval '1 hour'),
			(gen_random_uuid(), $1, 'reset live', $2::timestamptz + interval '1 hour')`,
		`INSERT INTO auth.mfa_email_codes (id, user_id, code_hash, expires_at) VALUES
			(gen_random_uuid(), $1, 'code expired 2 days ago', $2::timestamptz - interval '2 days'),
			(gen_random_uuid(), $1, 'code live', $2::timestamptz + interval '5 minutes')`,
		`INSERT INTO auth.trusted_devices (id, user_id, token_hash, expires_at) VALUES
			(gen_random_uuid(), $1, 'device expired 2 days ago', $2::timestamptz - interval '2 days'),
			(gen_random_uuid(), $1, 'device live', $2::timestamptz + interval '20 days')`,
		`INSERT INTO auth.security_log (id, user_id, action, created_at) VALUES
			(gen_random_uuid(), $1, 'old', $2::timestamptz - interval '401 days'),
			(gen_random_uuid(), $1, 'kept', $2::timestamptz - interval '399 days')`,
		`INSERT INTO mail.outbox (id, kind, to_address, subject, text_body, created_at, sent_at, failed_at) VALUES
			(gen_random_uuid(), 'receipt', 'old-sent@example.org', 's', 'b', $1::timestamptz - interval '32 days', $1::timestamptz - interval '31 days', NULL),
			(gen_random_uuid(), 'receipt', 'recent-sent@example.org', 's', 'b', $1::timestamptz - interval '29 days', $1::timestamptz - interval '29 days', NULL),
			(gen_random_uuid(), 'letter', 'old-failed@example.org', 's', 'b', $1::timestamptz - interval '90 days', NULL, $1::timestamptz - interval '89 days')`,
	} {
		args := []any{user, now}
		if strings.HasPrefix(q, "INSERT INTO mail.") { // no user: the time is $1
			args = []any{now}
		}
		if strings.Contains(q, "$3") {
			args = append(args, tid)
		}
		if _, err := f.pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	before := f.count(t, ctx)
	if err := f.s.prune(ctx); err != nil {
		t.Fatal(err)
	}
	after := f.count(t, ctx)
	want := map[string]int{"sessions": 2, "password_resets": 1, "mfa_email_codes": 1, "trusted_devices": 1, "security_log": 1, "mail_outbox": 1}
	for table, n := range want {
		if got := before[table] - after[table]; got != n {
			t.Errorf("%s: pruned %d of %d, want %d", table, got, before[table], n)
		}
	}
	var gone int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM auth.sessions WHERE token_hash IN ('ended 2 days ago', 'expired 2 days ago')`).Scan(&gone); err != nil || gone != 0 {
		t.Errorf("the two finished sessions are still there (%d, %v)", gone, err)
	}
	// A second pass finds nothing more.
	if err := f.s.prune(ctx); err != nil {
		t.Fatal(err)
	}
	if again := f.count(t, ctx); !maps.Equal(again, after) {
		t.Errorf("second pass changed %v to %v", after, again)
	}
	// Retention off keeps the log and the mail.
	f.s.cfg.Retention = Retention{Mail: -1, SecurityLog: -1}
	now = now.Add(3 * 365 * day)
	if err := f.s.prune(ctx); err != nil {
		t.Fatal(err)
	}
	if kept := f.count(t, ctx); kept["security_log"] != after["security_log"] || kept["mail_outbox"] != after["mail_outbox"] {
		t.Errorf("with retention off: %v, want the log and mail of %v", kept, after)
	}
}

// count is each pruned table's rows.
func (f *fixture) count(t *testing.T, ctx context.Context) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"sessions", "password_resets", "mfa_email_codes", "trusted_devices", "security_log", "mail_outbox"} {
		q := "auth." + table
		if table == "mail_outbox" {
			q = "mail.outbox"
		}
		var n int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM `+q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

func TestReadRetention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		mail     time.Duration
		log      time.Duration
		wantFail bool
	}{
		{"defaults", nil, 30 * 24 * time.Hour, 400 * 24 * time.Hour, false},
		{"set", map[string]string{"ALMONER_MAIL_RETENTION": "168h", "ALMONER_SECURITY_LOG_RETENTION": "8760h"}, 168 * time.Hour, 8760 * time.Hour, false},
		{"off", map[string]string{"ALMONER_MAIL_RETENTION": "off", "ALMONER_SECURITY_LOG_RETENTION": "off"}, -1, -1, false},
		{"under a day", map[string]string{"ALMONER_MAIL_RETENTION": "1h"}, 0, 0, true},
		{"not a duration", map[string]string{"ALMONER_SECURITY_LOG_RETENTION": "a year"}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := readRetention(config.Source(func(k string) string { return tc.env[k] }))
			if tc.wantFail {
				if err == nil {
					t.Fatalf("read %+v, want an error", r)
				}
				return
			}
			if err != nil || r.Mail != tc.mail || r.SecurityLog != tc.log || r.Interval != DefaultHousekeepingInterval {
				t.Errorf("read %+v, %v; want mail %s, log %s", r, err, tc.mail, tc.log)
			}
		})
	}
}
