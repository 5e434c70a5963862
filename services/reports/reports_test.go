package reports

import (
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
)

type runDoc struct {
	Columns       json.RawMessage `json:"columns"`
	Rows          json.RawMessage `json:"rows"`
	Totals        json.RawMessage `json:"totals"`
	TotalCount    int64           `json:"totalCount"`
	Page          int32           `json:"page"`
	PageSize      int32           `json:"pageSize"`
	NextPageToken string          `json:"nextPageToken"`
}

func params(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReportFigures checks every figure of every report type against the
// fixture, computed by hand:
//
//	#1  Jane    2026-01-15 USD General 100.00 (spring)         Completed
//	#2  Jane    2026-02-10 USD General 50.00 + Gala 25.00      refunded 30.00 → 20.00 + 10.00 → net 30.00 + 15.00
//	#3  Acme    2026-02-20 USD General 200.00                  Voided 2026-02-21
//	#4  Zoë     2026-03-05 EUR General 40.00 (spring)          Completed
//	#5  Acme    2026-01-20 USD General 60.00                   Refunded 2026-01-21
//	#6  Bob     2025-06-01 USD General 80.00
//	#7  Jane    2025-03-01 USD General 10.00
//	#8  Old     2024-05-05 USD General 70.00
//	#9  Zoë     2026-03-05 USD 2 × Gala ticket at 50.00 (FMV 30.00) → deductible 40.00
//	#10 Ray     2024-02-02 USD General 20.00
//	#11 Ray     2026-04-01 USD General 15.00
func TestReportFigures(t *testing.T) {
	f := newFixture(t)
	x := &server{s: f.svc}
	year := map[string]any{"From": "2026-01-01", "To": "2026-12-31"}
	tests := []struct {
		typ        string
		params     map[string]any
		rows       string
		totals     string
		totalCount int64
	}{
		{"donations-by-period", year,
			`[{"PeriodStart":"2026-01-01","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":100.00},` +
				`{"PeriodStart":"2026-02-01","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":45.00},` +
				`{"PeriodStart":"2026-03-01","Currency":"EUR","GiftCount":1,"DonorCount":1,"Amount":40.00},` +
				`{"PeriodStart":"2026-04-01","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":15.00}]`,
			`[{"PeriodStart":null,"Currency":"EUR","GiftCount":1,"DonorCount":null,"Amount":40.00},{"PeriodStart":null,"Currency":"USD","GiftCount":3,"DonorCount":null,"Amount":160.00}]`, 4},
		{"donations-by-period", map[string]any{"Interval": "quarter", "From": "2026-01-01", "To": "2026-12-31", "FundId": f.gala.String()},
			`[{"PeriodStart":"2026-01-01","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":15.00}]`,
			`[{"PeriodStart":null,"Currency":"USD","GiftCount":1,"DonorCount":null,"Amount":15.00}]`, 1},
		{"donations-by-period", map[string]any{"Interval": "year", "From": "2024-01-01", "To": "2026-12-31", "CampaignId": "spring"},
			`[{"PeriodStart":"2026-01-01","Currency":"EUR","GiftCount":1,"DonorCount":1,"Amount":40.00},{"PeriodStart":"2026-01-01","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":100.00}]`,
			`[{"PeriodStart":null,"Currency":"EUR","GiftCount":1,"DonorCount":null,"Amount":40.00},{"PeriodStart":null,"Currency":"USD","GiftCount":1,"DonorCount":null,"Amount":100.00}]`, 2},
		{"donations-by-fund", year,
			`[{"FundId":"` + f.gala.String() + `","FundName":"Gala","Currency":"USD","GiftCount":1,"Amount":15.00},` +
				`{"FundId":"` + f.general.String() + `","FundName":"General","Currency":"EUR","GiftCount":1,"Amount":40.00},` +
				`{"FundId":"` + f.general.String() + `","FundName":"General","Currency":"USD","GiftCount":3,"Amount":145.00}]`,
			`[{"FundId":null,"FundName":null,"Currency":"EUR","GiftCount":1,"Amount":40.00},{"FundId":null,"FundName":null,"Currency":"USD","GiftCount":4,"Amount":160.00}]`, 3},
		{"donations-by-campaign", year,
			`[{"CampaignId":"","Currency":"USD","GiftCount":2,"DonorCount":2,"Amount":60.00},` +
				`{"CampaignId":"spring","Currency":"EUR","GiftCount":1,"DonorCount":1,"Amount":40.00},` +
				`{"CampaignId":"spring","Currency":"USD","GiftCount":1,"DonorCount":1,"Amount":100.00}]`,
			`[{"CampaignId":null,"Currency":"EUR","GiftCount":1,"DonorCount":null,"Amount":40.00},{"CampaignId":null,"Currency":"USD","GiftCount":3,"DonorCount":null,"Amount":160.00}]`, 3},
		{"top-donors", year,
			`[{"Rank":1,"ContactId":3,"ContactName":"Zoë 王","Currency":"EUR","GiftCount":1,"Amount":40.00},` +
				`{"Rank":1,"ContactId":1,"ContactName":"Jane Donor","Currency":"USD","GiftCount":2,"Amount":145.00},` +
				`{"Rank":2,"ContactId":6,"ContactName":"Ray Recovered\nLine","Currency":"USD","GiftCount":1,"Amount":15.00}]`,
			`[{"Rank":null,"ContactId":null,"ContactName":null,"Currency":"EUR","GiftCount":1,"Amount":40.00},{"Rank":null,"ContactId":null,"ContactName":null,"Currency":"USD","GiftCount":3,"Amount":160.00}]`, 3},
		{"top-donors", map[string]any{"From": "2026-01-01", "To": "2026-12-31", "Limit": 1},
			`[{"Rank":1,"ContactId":3,"ContactName":"Zoë 王","Currency":"EUR","GiftCount":1,"Amount":40.00},` +
				`{"Rank":1,"ContactId":1,"ContactName":"Jane Donor","Currency":"USD","GiftCount":2,"Amount":145.00}]`,
			`[{"Rank":null,"ContactId":null,"ContactName":null,"Currency":"EUR","GiftCount":1,"Amount":40.00},{"Rank":null,"ContactId":null,"ContactName":null,"Currency":"USD","GiftCount":2,"Amount":145.00}]`, 2},
		{"lybunt", map[string]any{"Year": 2026},
			`[{"ContactId":4,"ContactName":"Bob Lapsed","Currency":"USD","LastGiftDate":"2025-06-01","LastGiftAmount":80.00,"LastYearAmount":80.00}]`,
			`[{"ContactId":null,"ContactName":null,"Currency":"USD","LastGiftDate":null,"LastGiftAmount":80.00,"LastYearAmount":80.00}]`, 1},
		{"sybunt", map[string]any{"Year": "2026"},
			`[{"ContactId":5,"ContactName":"Old Sybunt","Currency":"USD","LastGiftDate":"2024-05-05","LastGiftAmount":70.00,"LifetimeAmount":70.00}]`,
			`[{"ContactId":null,"ContactName":null,"Currency":"USD","LastGiftDate":null,"LastGiftAmount":70.00,"LifetimeAmount":70.00}]`, 1},
		{"donor-retention", map[string]any{"Year": 2026},
			`[{"PreviousYear":2025,"Year":2026,"PreviousYearDonors":2,"YearDonors":3,"Retained":1,"Lapsed":1,"New":1,"Recovered":1,"RetentionRate":50.00}]`,
			`[]`, 1},
		{"new-donors", year,
			`[{"ContactId":3,"ContactName":"Zoë 王","FirstGiftDate":"2026-03-05","Currency":"EUR","FirstGiftAmount":40.00}]`,
			`[{"ContactId":null,"ContactName":null,"FirstGiftDate":null,"Currency":"EUR","FirstGiftAmount":40.00}]`, 1},
		{"recurring-revenue", year,
			`[{"Currency":"EUR","ActiveSchedules":1,"MonthlyRecurringRevenue":10.00,"Cancellations":0,"PausedSchedules":0},{"Currency":"USD","ActiveSchedules":2,"MonthlyRecurringRevenue":62.00,"Cancellations":1,"PausedSchedules":0}]`,
			`[{"Currency":"EUR","ActiveSchedules":1,"MonthlyRecurringRevenue":10.00,"Cancellations":0,"PausedSchedules":0},{"Currency":"USD","ActiveSchedules":2,"MonthlyRecurringRevenue":62.00,"Cancellations":1,"PausedSchedules":0}]`, 2},
		{"refunds-and-voids", year,
			`[{"Date":"2026-01-21","OrderNumber":5,"ContactId":2,"Kind":"Refund","Currency":"USD","Amount":60.00,"Reason":""},` +
				`{"Date":"2026-02-11","OrderNumber":2,"ContactId":1,"Kind":"Refund","Currency":"USD","Amount":30.00,"Reason":"Changed mind, \"oops\""},` +
				`{"Date":"2026-02-21","OrderNumber":3,"ContactId":2,"Kind":"Void","Currency":"USD","Amount":200.00,"Reason":""}]`,
			`[{"Date":null,"OrderNumber":null,"ContactId":null,"Kind":null,"Currency":"USD","Amount":290.00,"Reason":null}]`, 3},
		{"item-sales", year,
			`[{"Sku":"GALA-T","Name":"Gala ticket","Currency":"USD","Quantity":2,"Revenue":100.00}]`,
			`[{"Sku":null,"Name":null,"Currency":"USD","Quantity":2,"Revenue":100.00}]`, 1},
		{"inventory-stock", nil,
			`[{"Sku":"GALA-T","Name":"Gala ticket","Category":"Events","Currency":"USD","Price":50.00,"TrackStock":true,"StockOnHand":10,"StockValue":500.00},` +
				`{"Sku":"TOTE","Name":"Tote, \"large\"","Category":"Merch","Currency":"USD","Price":15.00,"TrackStock":false,"StockOnHand":0,"StockValue":0.00}]`,
			`[{"Sku":null,"Name":null,"Category":null,"Currency":"USD","Price":null,"TrackStock":null,"StockOnHand":10,"StockValue":500.00}]`, 2},
		{"giving-statement", map[string]any{"ContactId": 1, "Year": 2026},
			`[{"GiftDate":"2026-01-15","OrderNumber":1,"Description":"General","Currency":"USD","Amount":100.00,"DeductibleAmount":100.00},` +
				`{"GiftDate":"2026-02-10","OrderNumber":2,"Description":"General","Currency":"USD","Amount":30.00,"DeductibleAmount":30.00}]`,
			`[{"GiftDate":null,"OrderNumber":null,"Description":null,"Currency":"USD","Amount":130.00,"DeductibleAmount":130.00}]`, 2},
		{"giving-statement", map[string]any{"ContactId": 3, "Year": 2026},
			`[{"GiftDate":"2026-03-05","OrderNumber":4,"Description":"General","Currency":"EUR","Amount":40.00,"DeductibleAmount":40.00},` +
				`{"GiftDate":"2026-03-05","OrderNumber":9,"Description":"Gala ticket × 2","Currency":"USD","Amount":100.00,"DeductibleAmount":40.00}]`,
			`[{"GiftDate":null,"OrderNumber":null,"Description":null,"Currency":"EUR","Amount":40.00,"DeductibleAmount":40.00},{"GiftDate":null,"OrderNumber":null,"Description":null,"Currency":"USD","Amount":100.00,"DeductibleAmount":40.00}]`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			body, err := x.RunReportType(f.ctx(), &reportsv1.RunReportTypeRequest{TenantId: f.tenant.String(), TypeKey: tt.typ, Body: &reportsv1.RunBody{Parameters: params(t, tt.params)}})
			if err != nil {
				t.Fatal(err)
			}
			var doc runDoc
			if err := json.Unmarshal(body.GetData(), &doc); err != nil {
				t.Fatalf("%v: %s", err, body.GetData())
			}
			if got := string(doc.Rows); got != tt.rows {
				t.Errorf("rows\n got %s\nwant %s", got, tt.rows)
			}
			if got := string(doc.Totals); got != tt.totals {
				t.Errorf("totals\n got %s\nwant %s", got, tt.totals)
			}
			if doc.TotalCount != tt.totalCount || doc.Page != 1 || doc.PageSize != 50 || doc.NextPageToken != "" {
				t.Errorf("got totalCount %d page %d pageSize %d token %q, want %d 1 50 \"\"", doc.TotalCount, doc.Page, doc.PageSize, doc.NextPageToken, tt.totalCount)
			}
		})
	}
}
