package reports

import (
	"github.com/almoner/almoner/pkg/reporttypes"

	"fmt"
	"strings"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/services/reports/store"
)

// Type is one pre-built report: its parameters, its columns and the SQL
// that makes its rows. The SQL reads only the views other services publish
// (orders.report_*_v1, contacts.report_contacts_v1,
// inventory.report_items_v1) and always filters by tenant ($1).
type Type struct {
	Key         string
	Name        string
	Description string
	Params      []Param
	Columns     []store.Column
	// build returns the query for validated values; $1 is the tenant.
	build func(v Values) store.Query
	// check validates values against each other.
	check func(v Values) error
}

func (t *Type) param(key string) *Param {
	for i := range t.Params {
		if strings.EqualFold(t.Params[i].Key, key) {
			return &t.Params[i]
		}
	}
	return nil
}

// Gifts are the donation lines of orders that stand: Completed and
// PartiallyRefunded, at their net amount (each line's share of refunds is
// stored by the orders service; a gift is one order, at its donation lines'
// net sum).
// Voided and fully refunded orders are left out of every giving figure and
// appear only in refunds-and-voids.
const standing = `status IN ('Completed', 'PartiallyRefunded')`

func yearStart(now time.Time) string {
	return time.Date(now.UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}
func today(now time.Time) string    { return now.UTC().Format(time.DateOnly) }
func thisYear(now time.Time) string { return fmt.Sprint(now.UTC().Year()) }
func constant(s string) func(time.Time) string {
	return func(time.Time) string { return s }
}

var (
	fromParam = Param{Key: "From", Type: ParamDate, Default: yearStart, Description: "First day included (UTC); default the first day of this year."}
	toParam   = Param{Key: "To", Type: ParamDate, Default: today, Description: "Last day included (UTC); default today."}
	yearParam = Param{Key: "Year", Type: ParamInteger, Default: thisYear, Min: 1900, Max: 9998, Description: "The calendar year (UTC); default this year."}
)

// fromTo checks From ≤ To.
func fromTo(v Values) error {
	if v.Date("To").Before(v.Date("From")) {
		return apperr.Invalid(apperr.Violation{Field: "Parameters.To", Message: "'To' must be on or after 'From'."})
	}
	return nil
}

// dayRange turns the inclusive From..To dates into the half-open timestamp
// range on created_at, which the orders index serves.
func dayRange(v Values) (time.Time, time.Time) {
	return v.Date("From"), v.Date("To").AddDate(0, 0, 1)
}

func yearRange(y int64) (time.Time, time.Time) {
	s := time.Date(int(y), 1, 1, 0, 0, 0, 0, time.UTC)
	return s, s.AddDate(1, 0, 0)
}

func col(key, label, typ string) store.Column {
	return store.Column{Key: key, Label: label, Type: typ}
}
func money(key, label string) store.Column {
	return store.Column{Key: key, Label: label, Type: store.Decimal, Sum: true}
}
func count(key, label string) store.Column {
	return store.Column{Key: key, Label: label, Type: store.Integer, Sum: true}
}

var currencyCol = col("Currency", "Currency", store.String)

// Catalog is every report type, in the order GET /reports/types lists them.
var Catalog = []*Type{
	{
		Key:         reporttypes.DonationsByPeriod,
		Name:        "Donations by period",
		Description: "Gifts per day, week (from Monday), month, quarter or year, per currency: number of gifts (orders), of donors, and the net amount.",
		Params: []Param{
			{Key: "Interval", Type: ParamEnum, Default: constant("month"), Allowed: []string{"day", "week", "month", "quarter", "year"}, Description: "The period length."},
			fromParam, toParam,
			{Key: "FundId", Type: ParamUUID, Description: "Only gifts to this fund."},
			{Key: "CampaignId", Type: ParamString, Description: "Only gifts of this campaign."},
		},
		Columns: []store.Column{col("PeriodStart", "Period start", store.Date), currencyCol, count("GiftCount", "Gifts"), col("DonorCount", "Donors", store.Integer), money("Amount", "Amount")},
		check:   fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			q := store.Query{Args: []any{v.Str("Interval"), from, to}, Order: `"PeriodStart", "Currency"`}
			where := ""
			if f := v.Str("FundId"); f != "" {
				q.Args = append(q.Args, f)
				where += fmt.Sprintf(" AND fund_id = $%d", len(q.Args)+1)
			}
			if c := v.Str("CampaignId"); c != "" {
				q.Args = append(q.Args, c)
				where += fmt.Sprintf(" AND campaign_id = $%d", len(q.Args)+1)
			}
			if where == "" {
				// Without a fund or campaign filter a gift is a whole order:
				// the orders view alone (one index-only range scan), no join.
				q.SQL = `SELECT date_trunc($2, order_date::timestamp)::date AS "PeriodStart", currency AS "Currency",
					count(*) AS "GiftCount", count(DISTINCT contact_id) AS "DonorCount", sum(donation_net_minor)::bigint AS "Amount"
					FROM orders.report_orders_v1
					WHERE tenant_id = $1 AND has_donations AND ` + standing + ` AND created_at >= $3 AND created_at < $4
					GROUP BY 1, 2`
				return q
			}
			q.SQL = `SELECT date_trunc($2, gift_date::timestamp)::date AS "PeriodStart", currency AS "Currency",
				count(DISTINCT order_id) AS "GiftCount", count(DISTINCT contact_id) AS "DonorCount", sum(net_amount_minor)::bigint AS "Amount"
				FROM orders.report_donations_v1
				WHERE tenant_id = $1 AND ` + standing + ` AND created_at >= $3 AND created_at < $4` + where + `
				GROUP BY 1, 2`
			return q
		},
	},
	{
		Key:         reporttypes.DonationsByFund,
		Name:        "Donations by fund",
		Description: "Gifts per fund and currency in a date range: number of gifts (orders) and the net amount. The fund's name is the latest one its gifts recorded.",
		Params:      []Param{fromParam, toParam},
		Columns:     []store.Column{col("FundId", "Fund ID", store.String), col("FundName", "Fund", store.String), currencyCol, count("GiftCount", "Gifts"), money("Amount", "Amount")},
		check:       fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to}, Order: `"FundName", "FundId", "Currency"`, SQL: `
				SELECT fund_id::text AS "FundId", (array_agg(fund_name ORDER BY created_at DESC))[1] AS "FundName", currency AS "Currency",
				count(DISTINCT order_id) AS "GiftCount", sum(net_amount_minor)::bigint AS "Amount"
				FROM orders.report_donations_v1
				WHERE tenant_id = $1 AND ` + standing + ` AND created_at >= $2 AND created_at < $3
				GROUP BY fund_id, currency`}
		},
	},
	{
		Key:         reporttypes.DonationsByCampaign,
		Name:        "Donations by campaign",
		Description: "Gifts per campaign and currency in a date range: gifts (orders), donors and the net amount. Gifts without a campaign are under an empty CampaignId.",
		Params:      []Param{fromParam, toParam},
		Columns:     []store.Column{col("CampaignId", "Campaign", store.String), currencyCol, count("GiftCount", "Gifts"), col("DonorCount", "Donors", store.Integer), money("Amount", "Amount")},
		check:       fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to}, Order: `"CampaignId", "Currency"`, SQL: `
				SELECT campaign_id AS "CampaignId", currency AS "Currency",
				count(DISTINCT order_id) AS "GiftCount", count(DISTINCT contact_id) AS "DonorCount", sum(net_amount_minor)::bigint AS "Amount"
				FROM orders.report_donations_v1
				WHERE tenant_id = $1 AND ` + standing + ` AND created_at >= $2 AND created_at < $3
				GROUP BY 1, 2`}
		},
	},
	{
		Key:         reporttypes.TopDonors,
		Name:        "Top donors",
		Description: "The donors who gave the most in a date range, ranked per currency by net amount (ties by contact id).",
		Params:      []Param{fromParam, toParam, {Key: "Limit", Type: ParamInteger, Default: constant("10"), Min: 1, Max: 1000, Description: "How many donors per currency."}},
		Columns:     []store.Column{col("Rank", "Rank", store.Integer), col("ContactId", "Contact ID", store.Integer), col("ContactName", "Contact name", store.String), currencyCol, count("GiftCount", "Gifts"), money("Amount", "Amount")},
		check:       fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to, v.Int("Limit")}, Order: `"Currency", "Rank"`, SQL: `
				SELECT t."Rank", t.contact_id AS "ContactId", coalesce(c.display_name, '') AS "ContactName", t.currency AS "Currency", t.gifts AS "GiftCount", t.amount AS "Amount"
				FROM (SELECT contact_id, currency, count(*) AS gifts, sum(donation_net_minor)::bigint AS amount,
					row_number() OVER (PARTITION BY currency ORDER BY sum(donation_net_minor) DESC, contact_id) AS "Rank"
					FROM orders.report_orders_v1
					WHERE tenant_id = $1 AND has_donations AND ` + standing + ` AND created_at >= $2 AND created_at < $3
					GROUP BY contact_id, currency) t
				LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = $1 AND c.contact_id = t.contact_id
				WHERE t."Rank" <= $4`}
		},
	},
	{
		Key:         reporttypes.Lybunt,
		Name:        "LYBUNT",
		Description: "Donors who gave Last Year But Unfortunately Not This year (any currency), one row per currency they gave in last year, with last year's total and their last gift before this year.",
		Params:      []Param{yearParam},
		Columns:     bunt("LastYearAmount", "Last year"),
		build: func(v Values) store.Query {
			ys, ye := yearRange(v.Int("Year"))
			// Every row of a LYBUNT donor has a gift last year in its
			// currency, so its last gift is last year's last. The query
			// drops last year's gifts of donors who gave this year first (a
			// hash anti join of the two years' index-only scans), so only
			// the lapsed donors' gifts are aggregated, and looks up their
			// last gifts and names one by one.
			return store.Query{Args: []any{ys, ye, ys.AddDate(-1, 0, 0)}, Order: `"ContactId", "Currency"`, SQL: `
				WITH ly AS (SELECT o.contact_id, o.currency, sum(o.donation_net_minor)::bigint AS amount, max(o.created_at) AS last_at
					FROM orders.report_orders_v1 o WHERE o.tenant_id = $1 AND o.has_donations AND o.` + standing + ` AND o.created_at >= $4 AND o.created_at < $2
						AND NOT EXISTS (SELECT 1 FROM orders.report_orders_v1 t WHERE t.tenant_id = $1 AND t.contact_id = o.contact_id
							AND t.has_donations AND t.` + standing + ` AND t.created_at >= $2 AND t.created_at < $3)
					GROUP BY o.contact_id, o.currency)
				SELECT ly.contact_id AS "ContactId", coalesce(c.display_name, '') AS "ContactName", ly.currency AS "Currency",
					(ly.last_at AT TIME ZONE 'UTC')::date AS "LastGiftDate", lg.amount AS "LastGiftAmount", ly.amount AS "LastYearAmount"
				FROM ly
				LEFT JOIN LATERAL (SELECT o.donation_net_minor AS amount FROM orders.report_orders_v1 o
					WHERE o.tenant_id = $1 AND o.created_at = ly.last_at AND o.contact_id = ly.contact_id AND o.currency = ly.currency
						AND o.has_donations AND o.` + standing + `
					ORDER BY o.order_id DESC LIMIT 1) lg ON true
				LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = $1 AND c.contact_id = ly.contact_id`}
		},
	},
	{
		Key:         reporttypes.Sybunt,
		Name:        "SYBUNT",
		Description: "Donors who gave Some Year (before last year) But Unfortunately Not This year nor last year, one row per currency, with their total before this year and their last gift.",
		Params:      []Param{yearParam},
		Columns:     bunt("LifetimeAmount", "Lifetime"),
		build: func(v Values) store.Query {
			ys, ye := yearRange(v.Int("Year"))
			return store.Query{Args: []any{ys, ye, ys.AddDate(-1, 0, 0)}, Order: `"ContactId", "Currency"`, SQL: giftsCTE + `,
				lapsed AS (SELECT contact_id FROM g GROUP BY contact_id HAVING NOT bool_or(created_at >= $4))
				SELECT l.contact_id AS "ContactId", coalesce(c.display_name, '') AS "ContactName", g.currency AS "Currency",
					(max(g.created_at) AT TIME ZONE 'UTC')::date AS "LastGiftDate",
					(array_agg(g.amount ORDER BY g.created_at DESC, g.order_id DESC))[1] AS "LastGiftAmount",
					sum(g.amount)::bigint AS "LifetimeAmount"
				FROM lapsed l JOIN g ON g.contact_id = l.contact_id AND g.created_at < $2
				LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = $1 AND c.contact_id = l.contact_id
				GROUP BY l.contact_id, c.display_name, g.currency`}
		},
	},
	{
		Key:         reporttypes.DonorRetention,
		Name:        "Donor retention",
		Description: "Donors of the previous and the current year (any currency): retained (both years), lapsed (previous only), new (first gift ever in the current year), recovered (current year, not the previous, but some earlier year), and the retention rate = retained / previous year's donors × 100.",
		Params:      []Param{yearParam, {Key: "PreviousYear", Type: ParamInteger, Min: 1900, Max: 9998, Description: "The year compared with; default Year − 1."}},
		Columns: []store.Column{col("PreviousYear", "Previous year", store.Integer), col("Year", "Year", store.Integer),
			col("PreviousYearDonors", "Previous year donors", store.Integer), col("YearDonors", "Year donors", store.Integer),
			col("Retained", "Retained", store.Integer), col("Lapsed", "Lapsed", store.Integer), col("New", "New", store.Integer),
			col("Recovered", "Recovered", store.Integer), col("RetentionRate", "Retention rate", store.Percent)},
		check: func(v Values) error {
			if p, ok := v["PreviousYear"]; ok && p.(int64) >= v.Int("Year") {
				return apperr.Invalid(apperr.Violation{Field: "Parameters.PreviousYear", Message: "'PreviousYear' must be before 'Year'."})
			}
			return nil
		},
		build: func(v Values) store.Query {
			y := v.Int("Year")
			py := y - 1
			if p, ok := v["PreviousYear"]; ok {
				py = p.(int64)
			}
			ys, ye := yearRange(y)
			ps, pe := yearRange(py)
			return store.Query{Args: []any{ps, pe, ys, ye, py, y}, Order: `"Year"`, SQL: `
				WITH d AS (SELECT contact_id,
						bool_or(created_at >= $2 AND created_at < $3) AS prev,
						bool_or(created_at >= $4 AND created_at < $5) AS cur,
						bool_or(created_at < $2) AS before_prev,
						bool_or(created_at < $4) AS before_cur
					FROM orders.report_orders_v1 WHERE tenant_id = $1 AND has_donations AND ` + standing + ` AND created_at < $5
					GROUP BY contact_id)
				SELECT $6::bigint AS "PreviousYear", $7::bigint AS "Year",
					count(*) FILTER (WHERE prev) AS "PreviousYearDonors", count(*) FILTER (WHERE cur) AS "YearDonors",
					count(*) FILTER (WHERE prev AND cur) AS "Retained", count(*) FILTER (WHERE prev AND NOT cur) AS "Lapsed",
					count(*) FILTER (WHERE cur AND NOT before_cur) AS "New",
					count(*) FILTER (WHERE cur AND NOT prev AND before_cur) AS "Recovered",
					CASE WHEN count(*) FILTER (WHERE prev) = 0 THEN NULL ELSE
						round(100.0 * count(*) FILTER (WHERE prev AND cur) / count(*) FILTER (WHERE prev), 2)::text END AS "RetentionRate"
				FROM d`}
		},
	},
	{
		Key:         reporttypes.NewDonors,
		Name:        "New donors",
		Description: "Contacts whose first gift ever (any currency) falls in the date range, with that gift.",
		Params:      []Param{fromParam, toParam},
		Columns:     []store.Column{col("ContactId", "Contact ID", store.Integer), col("ContactName", "Contact name", store.String), col("FirstGiftDate", "First gift", store.Date), currencyCol, money("FirstGiftAmount", "First gift amount")},
		check:       fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to}, Order: `"FirstGiftDate", "ContactId"`, SQL: `
				WITH g AS (SELECT contact_id, order_id, currency, created_at, donation_net_minor AS amount
					FROM orders.report_orders_v1 WHERE tenant_id = $1 AND has_donations AND ` + standing + ` AND created_at < $3),
				f AS (SELECT DISTINCT ON (contact_id) * FROM g ORDER BY contact_id, created_at, order_id)
				SELECT f.contact_id AS "ContactId", coalesce(c.display_name, '') AS "ContactName",
					(f.created_at AT TIME ZONE 'UTC')::date AS "FirstGiftDate", f.currency AS "Currency", f.amount AS "FirstGiftAmount"
				FROM f LEFT JOIN contacts.report_contacts_v1 c ON c.tenant_id = $1 AND c.contact_id = f.contact_id
				WHERE f.created_at >= $2`}
		},
	},
	{
		Key:         reporttypes.RecurringRevenue,
		Name:        "Recurring revenue",
		Description: "Per currency: active schedules today, their monthly-normalized revenue (weekly × 52 / 12, quarterly / 3, annually / 12, rounded to the minor unit once per currency), and schedules cancelled in the date range.",
		Params:      []Param{fromParam, toParam},
		Columns: []store.Column{currencyCol, count("ActiveSchedules", "Active schedules"), money("MonthlyRecurringRevenue", "Monthly recurring revenue"),
			count("Cancellations", "Cancellations"), count("PausedSchedules", "Paused schedules")},
		check: fromTo,
		build: func(v Values) store.Query {
			// Paused schedules are counted apart: neither active nor in the
			// revenue, nor lost like a cancellation.
			return store.Query{Args: []any{v.Date("From"), v.Date("To")}, Order: `"Currency"`, SQL: `
				SELECT currency AS "Currency", count(*) FILTER (WHERE status = 'active') AS "ActiveSchedules",
					coalesce(round(sum(amount_minor * CASE frequency WHEN 'weekly' THEN 52.0 / 12 WHEN 'monthly' THEN 1 WHEN 'quarterly' THEN 1.0 / 3 ELSE 1.0 / 12 END)
						FILTER (WHERE status = 'active')), 0)::bigint AS "MonthlyRecurringRevenue",
					count(*) FILTER (WHERE cancelled_date BETWEEN $2 AND $3) AS "Cancellations",
					count(*) FILTER (WHERE status = 'paused') AS "PausedSchedules"
				FROM orders.report_schedules_v1 WHERE tenant_id = $1
				GROUP BY currency`}
		},
	},
	{
		Key:         reporttypes.UpcomingRecurring,
		Name:        "Upcoming recurring installments",
		Description: "The installments active schedules are expected to charge on each of the next Days days from From, per currency: how many and their amount. Paused and past-due schedules are left out; a declined installment waiting for its retry is expected on its retry day, an overdue one on From.",
		Params: []Param{
			{Key: "From", Type: ParamDate, Default: today, Description: "First day (UTC); default today."},
			{Key: "Days", Type: ParamInteger, Default: constant("30"), Min: 1, Max: 366, Description: "How many days from From."},
		},
		Columns: []store.Column{col("Date", "Date", store.Date), currencyCol, count("Installments", "Installments"), money("Amount", "Amount")},
		build:   upcomingRecurring,
	},
	{
		Key:         reporttypes.RefundsAndVoids,
		Name:        "Refunds and voids",
		Description: "Every refund (on its date, its amount) and every voided order (on the void's date, the order's total) in the date range.",
		Params:      []Param{fromParam, toParam},
		Columns: []store.Column{col("Date", "Date", store.Date), col("OrderNumber", "Order number", store.Integer), col("ContactId", "Contact ID", store.Integer),
			col("Kind", "Kind", store.String), currencyCol, money("Amount", "Amount"), col("Reason", "Reason", store.String)},
		check: fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to}, Order: `"Date", "OrderNumber", "Kind"`, SQL: `
				SELECT refund_date AS "Date", order_number AS "OrderNumber", contact_id AS "ContactId", 'Refund' AS "Kind", currency AS "Currency", amount_minor AS "Amount", reason AS "Reason"
				FROM orders.report_refunds_v1 WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
				UNION ALL
				SELECT (updated_at AT TIME ZONE 'UTC')::date, order_number, contact_id, 'Void', currency, total_minor, ''
				FROM orders.report_orders_v1 WHERE tenant_id = $1 AND status = 'Voided' AND updated_at >= $2 AND updated_at < $3`}
		},
	},
	{
		Key:         reporttypes.ItemSales,
		Name:        "Item sales",
		Description: "Items sold in the date range per item and currency: quantity and net revenue. Voided and fully refunded orders are left out; a partial refund lowers revenue, not quantity.",
		Params:      []Param{fromParam, toParam},
		Columns:     []store.Column{col("Sku", "SKU", store.String), col("Name", "Item", store.String), currencyCol, count("Quantity", "Quantity"), money("Revenue", "Revenue")},
		check:       fromTo,
		build: func(v Values) store.Query {
			from, to := dayRange(v)
			return store.Query{Args: []any{from, to}, Order: `"Sku", "Currency"`, SQL: `
				SELECT (array_agg(sku ORDER BY created_at DESC))[1] AS "Sku", (array_agg(name ORDER BY created_at DESC))[1] AS "Name", currency AS "Currency",
					sum(quantity)::bigint AS "Quantity", sum(net_amount_minor)::bigint AS "Revenue"
				FROM orders.report_order_items_v1 WHERE tenant_id = $1 AND ` + standing + ` AND created_at >= $2 AND created_at < $3
				GROUP BY item_id, currency`}
		},
	},
	{
		Key:         reporttypes.InventoryStock,
		Name:        "Inventory stock",
		Description: "Every active inventory item with its price and stock on hand; StockValue is price × stock of items that track stock.",
		Columns: []store.Column{col("Sku", "SKU", store.String), col("Name", "Item", store.String), col("Category", "Category", store.String), currencyCol,
			col("Price", "Price", store.Decimal), col("TrackStock", "Tracks stock", store.Boolean), count("StockOnHand", "Stock on hand"), money("StockValue", "Stock value")},
		build: func(Values) store.Query {
			return store.Query{Order: `"Sku"`, SQL: `
				SELECT sku AS "Sku", name AS "Name", category AS "Category", currency AS "Currency", price_minor AS "Price", track_stock AS "TrackStock",
					stock_on_hand::bigint AS "StockOnHand", CASE WHEN track_stock THEN price_minor * stock_on_hand ELSE 0 END::bigint AS "StockValue"
				FROM inventory.report_items_v1 WHERE tenant_id = $1 AND active`}
		},
	},
	{
		Key:         reporttypes.GivingStatement,
		Name:        "Giving statement",
		Description: "A contact's deductible gifts of a year, the data of a year-end tax receipt: each donation to a deductible fund at its net amount, and each item bought above fair market value for the part above it (net of refunds); totals per currency.",
		Params:      []Param{{Key: "ContactId", Type: ParamInteger, Required: true, Min: 1, Max: 1<<63 - 1, Description: "The contact."}, yearParam},
		Columns: []store.Column{col("GiftDate", "Date", store.Date), col("OrderNumber", "Order number", store.Integer), col("Description", "Description", store.String),
			currencyCol, money("Amount", "Amount"), money("DeductibleAmount", "Deductible amount")},
		build: func(v Values) store.Query {
			ys, ye := yearRange(v.Int("Year"))
			return store.Query{Args: []any{v.Int("ContactId"), ys, ye}, Order: `"GiftDate", "OrderNumber", "Description"`, SQL: `
				SELECT gift_date AS "GiftDate", order_number AS "OrderNumber", fund_name AS "Description", currency AS "Currency",
					net_amount_minor AS "Amount", net_amount_minor AS "DeductibleAmount"
				FROM orders.report_donations_v1 WHERE tenant_id = $1 AND contact_id = $2 AND ` + standing + ` AND is_tax_deductible AND created_at >= $3 AND created_at < $4
				UNION ALL
				SELECT order_date, order_number, name || ' × ' || quantity, currency, net_amount_minor,
					greatest(net_amount_minor - quantity * fair_market_value_minor, 0)
				FROM orders.report_order_items_v1 WHERE tenant_id = $1 AND contact_id = $2 AND ` + standing + ` AND created_at >= $3 AND created_at < $4
					AND net_amount_minor > quantity * fair_market_value_minor`}
		},
	},
}

// upcomingRecurring places each active schedule's installments in
// [From, From + Days): the one due now (on its retry day, or on From when
// overdue), then every later period boundary, anchor + k periods (months
// clamped as the orders runner does: Jan 31 + 1 month is Feb 28), up to
// the end date. k runs from the next charge date's own k, which the
// runner keeps on a boundary, to the window end's. A boundary that has
// passed before From is an installment the runner catches up (it charges
// each missed period, one a pass), so it counts on From. A schedule
// paused until a day counts too: pausing keeps its next charge date at
// the first boundary on or after that day, where the runner resumes it;
// one paused with no resume day has no next charge date and counts
// nothing.
func upcomingRecurring(v Values) store.Query {
	from := v.Date("From")
	days := v.Int("Days")
	return store.Query{Args: []any{from, from.AddDate(0, 0, int(days))}, Order: `"Date", "Currency"`, SQL: `
		WITH s AS (SELECT currency, amount_minor, end_date, anchor_date, next_charge_date, retry_on,
				CASE frequency WHEN 'weekly' THEN interval '7 days' WHEN 'monthly' THEN interval '1 month'
					WHEN 'quarterly' THEN interval '3 months' ELSE interval '12 months' END AS step,
				` + periodIndex("next_charge_date") + ` AS k0, ` + periodIndex("$3::date") + ` AS k1
			FROM orders.report_schedules_v2 WHERE tenant_id = $1 AND next_charge_date IS NOT NULL
				AND (status = 'active' OR (status = 'paused' AND paused_until IS NOT NULL))),
		d AS (SELECT currency, amount_minor, greatest(coalesce(retry_on, next_charge_date), $2) AS day FROM s
			UNION ALL
			SELECT currency, amount_minor, greatest(day, $2) FROM (
				SELECT s.currency, s.amount_minor, s.next_charge_date, s.end_date, (s.anchor_date + s.step * k)::date AS day
				FROM s, generate_series(s.k0 + 1, s.k1 + 1) k) later
			WHERE day > next_charge_date AND (end_date IS NULL OR day <= end_date))
		SELECT day AS "Date", currency AS "Currency", count(*) AS "Installments", sum(amount_minor)::bigint AS "Amount"
		FROM d WHERE day >= $2 AND day < $3
		GROUP BY 1, 2`}
}

// periodIndex is the SQL for the k of the period boundary on or before
// the date expression day, counted from the schedule's anchor_date in its
// frequency (for months, by calendar month: the clamped boundary of a
// month may fall after day, which the callers' range filters handle).
func periodIndex(day string) string {
	return `CASE frequency WHEN 'weekly' THEN (` + day + ` - anchor_date) / 7
					ELSE ((extract(year FROM ` + day + `) - extract(year FROM anchor_date)) * 12
						+ extract(month FROM ` + day + `) - extract(month FROM anchor_date))::int
						/ CASE frequency WHEN 'monthly' THEN 1 WHEN 'quarterly' THEN 3 ELSE 12 END END`
}

// giftsCTE is each standing order with donations before the end of the
// year ($3) as one gift, at its donations' net amount; $2 is the year's
// start.
const giftsCTE = `WITH g AS (SELECT contact_id, order_id, currency, created_at, donation_net_minor AS amount
	FROM orders.report_orders_v1 WHERE tenant_id = $1 AND has_donations AND ` + standing + ` AND created_at < $3)`

func bunt(key, label string) []store.Column {
	return []store.Column{col("ContactId", "Contact ID", store.Integer), col("ContactName", "Contact name", store.String), currencyCol,
		col("LastGiftDate", "Last gift", store.Date), money("LastGiftAmount", "Last gift amount"), money(key, label)}
}

// typeByKey finds a type; keys are exact.
func typeByKey(key string) *Type {
	for _, t := range Catalog {
		if t.Key == key {
			return t
		}
	}
	return nil
}
