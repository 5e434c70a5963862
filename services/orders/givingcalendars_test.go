package orders

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/almoner/almoner/services/orders/peers"
)

// fakeCalendars answers each tenant's calendar from a map (UTC and
// January for tenants it does not know: other tests' tenants share the
// database) and counts the reads of the tenant it watches.
type fakeCalendars struct {
	mu    sync.Mutex
	cals  map[string]peers.FiscalCalendar
	fail  map[string]bool
	reads map[string]int
}

func (f *fakeCalendars) FiscalCalendar(_ context.Context, tenant string) (peers.FiscalCalendar, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[tenant]++
	if f.fail[tenant] {
		return peers.FiscalCalendar{}, errors.New("auth is down")
	}
	if c, ok := f.cals[tenant]; ok {
		return c, nil
	}
	return peers.FiscalCalendar{Zone: "UTC", FiscalYearStart: 1}, nil
}

func (f *fakeCalendars) set(tenant string, c peers.FiscalCalendar, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cals[tenant], f.fail[tenant] = c, fail
}

func (f *fakeCalendars) readsOf(tenant string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[tenant]
}

// TestSyncGivingCalendars is the housekeeping's copy of the tenants'
// calendars: a tenant with gifts gets its copy and its period rows on the
// first pass, is read again only GivingCalendarCheckEvery later, is
// dropped and built again when its settings changed, and keeps its copy while its
// settings cannot be read.
func TestSyncGivingCalendars(t *testing.T) {
	t.Parallel()
	f := newImportFixture(t)
	ctx := context.Background()
	svc := f.srv.s
	now := time.Now()
	svc.cfg.Now = func() time.Time { return now }
	cals := &fakeCalendars{cals: map[string]peers.FiscalCalendar{}, fail: map[string]bool{}, reads: map[string]int{}}
	svc.cfg.FiscalCalendars = cals
	tenant := f.tenant.String()
	cals.set(tenant, peers.FiscalCalendar{Zone: "America/Los_Angeles", FiscalYearStart: 7}, false)
	// A gift on 15 March 2024: fiscal 2023-07-01 in a July year, 2023-04-01
	// in an April one.
	f.importRows(t, false, giftRow(1, "cal-1", 7, "General", "USD"))

	fiscalYears := func() string {
		var zone, years string
		if err := f.pool.QueryRow(ctx, `SELECT coalesce(r.time_zone, ''), coalesce(string_agg(p.period::text, ',' ORDER BY p.period), '')
			FROM orders.giving_rolling r LEFT JOIN orders.contact_giving_periods p ON p.tenant_id = r.tenant_id AND p.kind = 'y'
			WHERE r.tenant_id = $1 GROUP BY r.time_zone`, f.tenant).Scan(&zone, &years); err != nil {
			t.Fatal(err)
		}
		return zone + " " + years
	}
	sync := func(after time.Duration) {
		t.Helper()
		now = now.Add(after)
		if _, err := svc.syncGivingCalendars(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass := func(after time.Duration) {
		t.Helper()
		sync(after)
		if _, err := svc.buildGivingPeriods(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := fiscalYears(); got != " " {
		t.Fatalf("before any pass: %q, want no copy and no period rows", got)
	}
	// The import suspended the tenant's period rows for a while after
	// its last batch: no pass builds them before that.
	pass(0)
	if got := fiscalYears(); got != " " {
		t.Fatalf("a pass right after the import: %q, want no copy yet", got)
	}
	pass(3 * time.Minute)
	if got, want := fiscalYears(), "America/Los_Angeles 2023-07-01"; got != want {
		t.Fatalf("after the first pass: %q, want %q", got, want)
	}
	reads := cals.readsOf(tenant)
	pass(time.Minute)
	if cals.readsOf(tenant) != reads {
		t.Errorf("the settings were read again a minute later")
	}
	cals.set(tenant, peers.FiscalCalendar{Zone: "Asia/Kolkata", FiscalYearStart: 4}, true)
	pass(GivingCalendarCheckEvery + time.Second)
	if cals.readsOf(tenant) != reads+1 {
		t.Errorf("the settings were read %d times, want once more when due", cals.readsOf(tenant)-reads)
	}
	if got, want := fiscalYears(), "America/Los_Angeles 2023-07-01"; got != want {
		t.Errorf("while the settings cannot be read: %q, want the copy kept, %q", got, want)
	}
	cals.set(tenant, peers.FiscalCalendar{Zone: "Asia/Kolkata", FiscalYearStart: 4}, false)
	pass(time.Second)
	if cals.readsOf(tenant) != reads+1 {
		t.Errorf("a failed read was tried again before the copy was due")
	}
	// The changed settings drop the copy at once (readers read the gifts)
	// and leave the rows to the build.
	sync(GivingCalendarCheckEvery)
	if got, want := fiscalYears(), " 2023-07-01"; got != want {
		t.Errorf("after the settings changed, before the build: %q, want %q", got, want)
	}
	pass(0)
	if got, want := fiscalYears(), "Asia/Kolkata 2023-04-01"; got != want {
		t.Errorf("after the settings changed: %q, want %q", got, want)
	}
}

// TestStepContacts: a build's steps follow the time the last one took,
// growing at most twofold and staying within their bounds.
func TestStepContacts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		took time.Duration
		want int
	}{
		{200, 50 * time.Millisecond, 400},
		{200, 10 * time.Millisecond, 400},
		{200, 0, 400},
		{400, 200 * time.Millisecond, 200},
		{1000, 400 * time.Millisecond, 250},
		{300, 10 * time.Second, minStepContacts},
		{4000, time.Millisecond, maxStepContacts},
		{300, 120 * time.Millisecond, 250},
	} {
		if got := stepContacts(c.n, c.took); got != c.want {
			t.Errorf("stepContacts(%d, %v) = %d, want %d", c.n, c.took, got, c.want)
		}
	}
}
