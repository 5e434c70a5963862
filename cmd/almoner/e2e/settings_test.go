package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	ordersv1 "github.com/almoner/almoner/pkg/api/almoner/orders/v1"
)

// settingsRow is a tenant_settings.updated row as the audit log serves it.
type settingsRow struct {
	Action, Actor string
	Changes       map[string]struct{ Old, New any }
}

// settingsRows reads the tenant's TenantSettings rows, newest first.
func settingsRows(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) []settingsRow {
	t.Helper()
	var p struct{ Items []settingsRow }
	c.Do(t, "GET", tPath(tn.ID, "/audit-logs?entityType=TenantSettings&action=Updated"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
	return p.Items
}

// changedNames are the properties a row names, sorted.
func changedNames(r settingsRow) []string {
	var out []string
	for k := range r.Changes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestTenantSettings: GET /settings answers the defaults; a PUT changes
// only what it carries, with one tenant_settings.updated row naming
// exactly the changed properties (none for a PUT that changes nothing);
// a bad value or an unknown property is a 400 naming it and changes
// nothing; the currency is locked once an order exists; 403 without
// tenant-settings:manage; the profile shows the settings' time zone; the
// retry days set by REST are what the admin command sets and what the
// recurring runner counts a decline on. One process and split.
func TestTenantSettings(t *testing.T) {
	t.Parallel()
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			t.Parallel()
			c := apptest.Start(t, apptest.Options{Split: split, Settings: map[string]string{"ALMONER_ORDERS_RUNNER_INTERVAL": "30ms"}})
			tn := c.NewTenant(t)
			walkSettingsDocument(t, c, tn)
			walkSettingsRefusals(t, c, tn)
			walkSettingsAdminCommand(t, c, tn)
			walkSettingsOrders(t, c)
		})
	}
}

func walkSettingsDocument(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) {
	path := tPath(tn.ID, "/settings")
	def := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if def["defaultCurrency"] != "USD" || def["fiscalYearStartMonth"] != 1.0 || def["timeZone"] != "America/New_York" ||
		fmt.Sprint(def["recurringRetryDays"]) != "[1 3 7]" || def["dailyBatchCloseTime"] != "00:00" || def["receiptThreshold"] != 0.0 ||
		def["updatedAt"] != nil {
		t.Fatalf("defaults = %v", def)
	}

	// A partial PUT: one property changes, the others stay.
	got := c.Do(t, "PUT", path, tn.Key, map[string]any{"fiscalYearStartMonth": 7}).Expect(t, http.StatusOK).Map(t)
	if got["fiscalYearStartMonth"] != 7.0 || got["timeZone"] != "America/New_York" || fmt.Sprint(got["recurringRetryDays"]) != "[1 3 7]" ||
		got["updatedAt"] == nil {
		t.Errorf("after a partial PUT = %v", got)
	}
	rows := settingsRows(t, c, tn)
	if len(rows) != 1 || !slices.Equal(changedNames(rows[0]), []string{"fiscalYearStartMonth"}) || rows[0].Changes["fiscalYearStartMonth"].New != 7.0 ||
		!strings.HasPrefix(rows[0].Actor, "api-key:") {
		t.Errorf("rows after a partial PUT = %+v", rows)
	}

	// The same PUT again changes nothing and writes nothing.
	again := c.Do(t, "PUT", path, tn.Key, map[string]any{"fiscalYearStartMonth": 7, "timeZone": "America/New_York"}).Expect(t, http.StatusOK).Map(t)
	if again["updatedAt"] != got["updatedAt"] {
		t.Errorf("a no-op PUT moved updatedAt %v to %v", got["updatedAt"], again["updatedAt"])
	}
	if n := len(settingsRows(t, c, tn)); n != 1 {
		t.Errorf("%d rows after a no-op PUT, want 1", n)
	}

	// The whole document, as GET returned it with every value changed
	// (updatedAt sent back is ignored).
	full := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	full["defaultCurrency"], full["fiscalYearStartMonth"], full["timeZone"] = "EUR", 4, "Europe/Paris"
	full["recurringRetryDays"], full["dailyBatchCloseTime"], full["receiptThreshold"] = []int{2, 5}, "17:30", 25.5
	got = c.Do(t, "PUT", path, tn.Key, full).Expect(t, http.StatusOK).Map(t)
	if got["defaultCurrency"] != "EUR" || got["fiscalYearStartMonth"] != 4.0 || got["timeZone"] != "Europe/Paris" ||
		fmt.Sprint(got["recurringRetryDays"]) != "[2 5]" || got["dailyBatchCloseTime"] != "17:30" || got["receiptThreshold"] != 25.5 {
		t.Errorf("after a full PUT = %v", got)
	}
	if r := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK); !strings.Contains(string(r.Body), `"receiptThreshold":25.50`) {
		t.Errorf("the threshold is not written with the currency's decimals: %s", r.Body)
	}
	rows = settingsRows(t, c, tn)
	want := []string{"dailyBatchCloseTime", "defaultCurrency", "fiscalYearStartMonth", "receiptThreshold", "recurringRetryDays", "timeZone"}
	if len(rows) != 2 || !slices.Equal(changedNames(rows[0]), want) {
		t.Errorf("rows after a full PUT = %+v", rows)
	}
	// The organization profile shows the settings' time zone...
	if prof := c.Do(t, "GET", tPath(tn.ID, "/organization-profile"), tn.Key, nil).Expect(t, http.StatusOK).Map(t); prof["timeZone"] != "Europe/Paris" {
		t.Errorf("profile time zone %v, want the settings' Europe/Paris", prof["timeZone"])
	}
	// ...and a profile's PUT that changes it is the settings' change.
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, map[string]any{"legalName": "Food Bank", "timeZone": "Asia/Tokyo"}).
		Expect(t, http.StatusOK)
	if got := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["timeZone"] != "Asia/Tokyo" {
		t.Errorf("settings time zone %v after the profile's PUT, want Asia/Tokyo", got["timeZone"])
	}
	if rows = settingsRows(t, c, tn); len(rows) != 3 || !slices.Equal(changedNames(rows[0]), []string{"timeZone"}) {
		t.Errorf("rows after the profile's PUT = %+v", rows)
	}
}

func walkSettingsRefusals(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) {
	path := tPath(tn.ID, "/settings")
	before := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	rows := len(settingsRows(t, c, tn))
	for _, bad := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"fiscalYearStartMonth": 13}, "FiscalYearStartMonth"},
		{map[string]any{"fiscalYearStartMonth": 0}, "FiscalYearStartMonth"},
		{map[string]any{"timeZone": "Mars/Olympus"}, "TimeZone"},
		{map[string]any{"recurringRetryDays": []int{3, 1}}, "RecurringRetryDays"},
		{map[string]any{"recurringRetryDays": []any{1, "x"}}, "RecurringRetryDays[1]"},
		{map[string]any{"dailyBatchCloseTime": "24:00"}, "DailyBatchCloseTime"},
		{map[string]any{"receiptThreshold": -1}, "ReceiptThreshold"},
		{map[string]any{"receiptThreshold": 1.001}, "ReceiptThreshold"},
		{map[string]any{"defaultCurrency": "ABC"}, "DefaultCurrency"},
		// A good value beside a bad one is not applied either.
		{map[string]any{"fiscalYearStartMonth": 2, "timeZone": "Nowhere"}, "TimeZone"},
		{map[string]any{"fiscalYearStartMonth": 2, "fiscalYearStartMonthh": 3}, "FiscalYearStartMonthh"},
	} {
		r := c.Do(t, "PUT", path, tn.Key, bad.body).Expect(t, http.StatusBadRequest)
		if e := errorsOf(t, r); len(e[bad.field]) == 0 {
			t.Errorf("PUT %v: errors %v, want one under %s", bad.body, e, bad.field)
		}
	}
	if after := c.Do(t, "GET", path, tn.Key, nil).Expect(t, http.StatusOK).Map(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused PUTs changed the settings: %v, was %v", after, before)
	}
	if n := len(settingsRows(t, c, tn)); n != rows {
		t.Errorf("refused PUTs wrote %d rows", n-rows)
	}
	narrow := c.NewKey(t, tn.ID, "donations:view", "audit-logs:view")
	for m, body := range map[string]any{"GET": nil, "PUT": map[string]any{"fiscalYearStartMonth": 3}} {
		if r := c.Do(t, m, path, narrow, body).Expect(t, http.StatusForbidden); !strings.Contains(string(r.Body), "tenant-settings:manage") {
			t.Errorf("%s without the scope: %s", m, r.Body)
		}
	}
	other := c.NewTenant(t)
	c.Do(t, "GET", path, other.Key, nil).Expect(t, http.StatusNotFound)
}

// walkSettingsAdminCommand: the admin command's SetRecurringRetries
// (orders' internal RPC) writes the same setting REST does.
func walkSettingsAdminCommand(t *testing.T, c *apptest.Cluster, tn apptest.Tenant) {
	conn, err := grpc.NewClient(c.ServiceAddr("orders"), append(c.InternalKey.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := ordersv1.NewRecurringSettingsServiceClient(conn).SetRecurringRetries(context.Background(),
		&ordersv1.SetRecurringRetriesRequest{TenantId: tn.ID, Days: []int32{4, 9}})
	if err != nil || fmt.Sprint(resp.GetDays()) != "[4 9]" {
		t.Fatalf("SetRecurringRetries = %v, %v", resp, err)
	}
	if got := c.Do(t, "GET", tPath(tn.ID, "/settings"), tn.Key, nil).Expect(t, http.StatusOK).Map(t); fmt.Sprint(got["recurringRetryDays"]) != "[4 9]" {
		t.Errorf("REST reads %v after the admin command, want [4 9]", got["recurringRetryDays"])
	}
	rows := settingsRows(t, c, tn)
	if len(rows) == 0 || !slices.Equal(changedNames(rows[0]), []string{"recurringRetryDays"}) || rows[0].Actor != "system" {
		t.Errorf("the admin command's row = %+v", rows[:min(1, len(rows))])
	}
}

// walkSettingsOrders: the currency is locked once the tenant has an
// order, and the retry days set by REST are what the runner counts a
// decline on (2 days, not the default 1).
func walkSettingsOrders(t *testing.T, c *apptest.Cluster) {
	f := newOrderFixture(t, c, "api-access:enabled", "payment-processor:enabled")
	path := tPath(f.tn.ID, "/settings")
	// Before any order the currency may change, and the tenant's very next
	// request carries it: an order without a currency is in it.
	c.Do(t, "PUT", path, f.tn.Key, map[string]any{"defaultCurrency": "CAD", "recurringRetryDays": []int{2}}).Expect(t, http.StatusOK)
	body := f.cashOrder(10)
	delete(body, "currency")
	body["payments"] = []any{map[string]any{"paymentMethod": "Card", "amount": 10, "paymentToken": "tok_visa"}}
	body["recurringDonations"] = []any{map[string]any{"fundId": f.fund, "amount": 10, "frequency": "monthly", "paymentMethod": "Card",
		"paymentToken": "tok_decline"}}
	order := c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, body).Expect(t, http.StatusCreated).Map(t)
	if order["currency"] != "CAD" {
		t.Errorf("an order without a currency after the change is in %v, want CAD", order["currency"])
	}
	sid := order["recurringDonationIds"].([]any)[0].(string)
	rows := len(settingsRows(t, c, f.tn))
	r := c.Do(t, "PUT", path, f.tn.Key, map[string]any{"defaultCurrency": "EUR", "fiscalYearStartMonth": 5}).Expect(t, http.StatusBadRequest)
	if e := errorsOf(t, r); len(e["DefaultCurrency"]) != 1 || !strings.HasPrefix(e["DefaultCurrency"][0], "TenantSettings.CurrencyLocked") {
		t.Errorf("currency change with an order: %v", e)
	}
	// The same currency is no change, so not refused.
	c.Do(t, "PUT", path, f.tn.Key, map[string]any{"defaultCurrency": "CAD"}).Expect(t, http.StatusOK)
	if got := c.Do(t, "GET", path, f.tn.Key, nil).Expect(t, http.StatusOK).Map(t); got["defaultCurrency"] != "CAD" || got["fiscalYearStartMonth"] != 1.0 {
		t.Errorf("after the refused currency change = %v", got)
	}
	if n := len(settingsRows(t, c, f.tn)); n != rows {
		t.Errorf("the refused and the no-op PUT wrote %d rows", n-rows)
	}

	withDB(t, c, func(conn *pgx.Conn) {
		if _, err := conn.Exec(context.Background(), `UPDATE orders.recurring_donations SET next_charge_date = (now() AT TIME ZONE 'UTC')::date WHERE id = $1`, sid); err != nil {
			t.Fatal(err)
		}
	})
	today := time.Now().UTC()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sc := c.Do(t, "GET", tPath(f.tn.ID, "/recurring-donations/", sid), f.tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if sc["failedAttempts"] == 1.0 {
			// Around midnight UTC the runner's day may be the next one.
			if want := []string{today.AddDate(0, 0, 2).Format(time.DateOnly), today.AddDate(0, 0, 3).Format(time.DateOnly)}; !slices.Contains(want, sc["retryOn"].(string)) {
				t.Errorf("retryOn %v after the first decline, want %s (2 days, set by REST)", sc["retryOn"], want[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner did not charge the schedule in 30 s: %v", sc)
		}
	}
}
