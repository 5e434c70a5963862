package imports

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/almoner/almoner/pkg/config"
	"github.com/almoner/almoner/pkg/importrows"
	"github.com/almoner/almoner/services/imports/store"
)

// TestResumeRefusedPastRetention kills a runner mid-import (the batch in
// flight written by the service but not saved), ages the import, and lets
// a second runner claim it. Within the retention less ResumeMargin it
// resumes and sends the killed batch again, which the service answers
// from its rows. Past it the import fails with a message saying why and
// where it stopped, and sends nothing again: the service may have pruned
// the rows of that batch (the fake forgets them, as a prune would), and
// a batch sent again would be written twice.
func TestResumeRefusedPastRetention(t *testing.T) {
	t.Parallel()
	const retention = 48 * time.Hour
	cases := []struct {
		name    string
		age     time.Duration
		resumes bool
	}{
		{"started two hours ago", 2 * time.Hour, true},
		{"a minute inside the retention less the margin", retention - ResumeMargin - time.Minute, true},
		{"a minute past the retention less the margin", retention - ResumeMargin + time.Minute, false},
		{"past the retention, its rows pruned", retention + time.Hour, false},
		{"long past the retention", 10 * retention, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Config{Batch: 25, ImportRowsRetention: retention})
			var b strings.Builder
			b.WriteString("externalId,firstName,lastName,email\n")
			const rows = 300
			for i := 1; i <= rows; i++ {
				fmt.Fprintf(&b, "E%d,First%d,Last%d,p%d@example.org\n", i, i, i, i)
			}
			id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), b.String())
			ctx, kill := context.WithCancel(context.Background())
			var killed atomic.Bool
			f.fake.onCall = func(n int) {
				if n == 5 {
					killed.Store(true)
					kill()
				}
			}
			if !newRunner(f.svc, "runner-a").claimAndRun(ctx) || !killed.Load() {
				t.Fatal("runner a did not claim the import or was not killed")
			}
			f.fake.mu.Lock()
			f.fake.onCall = nil
			f.fake.mu.Unlock()
			// The killed call goes on in the server: its 25 rows are written
			// (the service committed, the runner never heard).
			waitFor(t, 5*time.Second, func() bool { return f.fake.locked(func() int { return f.fake.sends }) == 5*25 })
			checkpoint := f.count(t, `SELECT checkpoint FROM imports.imports WHERE id = $1`, id)
			if checkpoint != 100 {
				t.Fatalf("checkpoint %d after the kill, want 100 (4 batches saved)", checkpoint)
			}
			// The import started age ago; a's lease has run out.
			if _, err := f.pool.Exec(context.Background(), `UPDATE imports.imports
				SET started_at = now() - make_interval(secs => $2), lease_until = now() - interval '1 second' WHERE id = $1`,
				id, c.age.Seconds()); err != nil {
				t.Fatal(err)
			}
			sent := f.fake.locked(func() int {
				if !c.resumes {
					// What a prune past the retention does to the service's rows.
					clear(f.fake.written)
				}
				return f.fake.sends
			})
			if !newRunner(f.svc, "runner-b").claimAndRun(context.Background()) {
				t.Fatal("runner b did not claim the import")
			}
			got := f.get(t, id)
			if c.resumes {
				if got.GetStatus() != "succeeded" || got.GetCreated() != rows || f.fake.writtenCount() != rows {
					t.Fatalf("resumed import = %v, %d rows written; want succeeded with %d", got, f.fake.writtenCount(), rows)
				}
				if again := int64(f.fake.locked(func() int { return f.fake.sends }) - sent); again != rows-checkpoint {
					t.Errorf("%d rows sent on resume, want %d (the killed batch again and the rest)", again, rows-checkpoint)
				}
				return
			}
			if got.GetStatus() != "failed" || got.GetCreated() != checkpoint || got.GetFinishedAt() == nil {
				t.Fatalf("import too old to resume = %v; want failed with the %d rows of its saved batches", got, checkpoint)
			}
			for _, want := range []string{"cannot resume", "ALMONER_IMPORT_ROWS_RETENTION", "47h", fmt.Sprintf("up to row %d are imported", checkpoint)} {
				if !strings.Contains(got.GetMessage(), want) {
					t.Errorf("message %q does not say %q", got.GetMessage(), want)
				}
			}
			if now := f.fake.locked(func() int { return f.fake.sends }); now != sent {
				t.Errorf("%d rows sent again, want none", now-sent)
			}
			// Failed is final: no runner takes it again.
			if newRunner(f.svc, "runner-c").claimAndRun(context.Background()) {
				t.Error("a failed import was claimed")
			}
		})
	}
}

// TestRetryRefusedPastRetention: a batch whose call failed (its answer
// lost: it may have been written) is not sent again once the import is
// older than the retention less ResumeMargin; the import fails.
func TestRetryRefusedPastRetention(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{RetryBase: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond, ImportRowsRetention: 24 * time.Hour})
	f.fake.unavailable = 3
	id := f.mustUpload(t, header(f.tenant, "contacts", "csv"), "lastName\nA\nB\n")
	// Started (first claimed) long ago: the claim keeps a started_at.
	if _, err := f.pool.Exec(context.Background(), `UPDATE imports.imports SET started_at = now() - interval '30 days' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	f.runAll(t, "r")
	if got := f.get(t, id); got.GetStatus() != "failed" || !strings.Contains(got.GetMessage(), "cannot resume") {
		t.Fatalf("import = %v; want failed, too old to send a batch again", got)
	}
	if calls := f.fake.locked(func() int { return f.fake.calls }); calls != 1 {
		t.Errorf("%d calls, want the 1 refused and no other", calls)
	}
}

// locked runs fn under the fake's lock: the server's goroutines write
// what fn reads.
func (f *fakeServices) locked(fn func() int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fn()
}

// TestResumable: the rule on its own, by status, dry run and age.
func TestResumable(t *testing.T) {
	t.Parallel()
	s := &Service{cfg: Config{ImportRowsRetention: 720 * time.Hour}.withDefaults()}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { at := now.Add(-d); return &at }
	cases := []struct {
		name string
		m    store.Import
		ok   bool
	}{
		{"importing, started a day ago", store.Import{Status: store.Importing, StartedAt: ago(24 * time.Hour)}, true},
		{"importing, exactly at the limit", store.Import{Status: store.Importing, StartedAt: ago(719 * time.Hour)}, true},
		{"importing, a second past the limit", store.Import{Status: store.Importing, StartedAt: ago(719*time.Hour + time.Second)}, false},
		{"importing, past the retention", store.Import{Status: store.Importing, StartedAt: ago(800 * time.Hour), Checkpoint: 5000}, false},
		{"importing a dry run (no rows kept)", store.Import{Status: store.Importing, DryRun: true, StartedAt: ago(800 * time.Hour)}, true},
		{"validating (nothing written yet)", store.Import{Status: store.Validating, StartedAt: ago(800 * time.Hour)}, true},
		{"queued", store.Import{Status: store.Queued}, true},
	}
	for _, c := range cases {
		err := s.resumable(c.m, now)
		var refused *refusal
		if c.ok != (err == nil) || (err != nil && !errors.As(err, &refused)) {
			t.Errorf("%s: %v, want ok %v (or a refusal)", c.name, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("row %d", c.m.Checkpoint)) {
			t.Errorf("%s: %q does not name the checkpoint", c.name, err)
		}
	}
}

// TestImportRowsRetentionSetting: ALMONER_IMPORT_ROWS_RETENTION through
// ConfigFrom: its default, parse and bounds.
func TestImportRowsRetentionSetting(t *testing.T) {
	t.Parallel()
	// The bounds are pkg/importrows' (TestRetention); ConfigFrom reads them.
	for _, c := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", importrows.DefaultRetention, true},
		{"48h", 48 * time.Hour, true},
		{"1h", 0, false},
	} {
		cfg, err := ConfigFrom(config.Overlay(map[string]string{importrows.Setting: c.value}, nil))
		if (err == nil) != c.ok || (c.ok && cfg.ImportRowsRetention != c.want) {
			t.Errorf("%q: got %v, %v; want %v (ok %v)", c.value, cfg.ImportRowsRetention, err, c.want, c.ok)
		}
	}
	if got := (Config{}).withDefaults().ImportRowsRetention; got != importrows.DefaultRetention {
		t.Errorf("default %v, want %v", got, importrows.DefaultRetention)
	}
}
