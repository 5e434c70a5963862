package reports

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/testdb"
	"github.com/almoner/almoner/services/reports/store"
)

func TestWantsPDF(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		accept []string
		want   bool
	}{
		{nil, false},
		{[]string{"*/*"}, false},
		{[]string{"application/json"}, false},
		{[]string{"application/pdf"}, true},
		{[]string{"application/pdf, application/json"}, false}, // a tie is JSON
		{[]string{"application/json;q=0.5, application/pdf"}, true},
		{[]string{"application/pdf;q=0.5, application/json"}, false},
		{[]string{"application/pdf, */*;q=0.1"}, true},
		{[]string{"application/*;q=0.2, application/pdf"}, true},
		{[]string{"application/pdf;q=0"}, false},
		{[]string{"text/html", "application/pdf"}, true},
		{[]string{"garbage;;;"}, false},
	} {
		if got := wantsPDF(tc.accept); got != tc.want {
			t.Errorf("wantsPDF(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

// TestReceiptFigures checks the deductible amount and the value of goods:
// donations to deductible funds count in full, items for what they cost
// above their value, refunds net out, and a line refunded in full was
// given back.
func TestReceiptFigures(t *testing.T) {
	t.Parallel()
	gift := func(net int64, deductible bool) store.DonationLine {
		return store.DonationLine{FundName: "General", Deductible: deductible, NetMinor: net}
	}
	item := func(q, fmv, net int64) store.ItemLine {
		return store.ItemLine{Name: "Tote", Quantity: q, FairMarketValueMinor: fmv, NetMinor: net}
	}
	for _, tc := range []struct {
		name                     string
		o                        store.Order
		total, goods, deductible int64
	}{
		{"no goods", store.Order{Donations: []store.DonationLine{gift(10000, true)}}, 10000, 0, 10000},
		{"goods below the gift", store.Order{Donations: []store.DonationLine{gift(10000, true)}, Items: []store.ItemLine{item(2, 1000, 5000)}}, 15000, 2000, 13000},
		{"goods above the gift", store.Order{Donations: []store.DonationLine{gift(1000, true)}, Items: []store.ItemLine{item(2, 1000, 5000)}}, 6000, 2000, 4000},
		{"item at its value", store.Order{Items: []store.ItemLine{item(1, 2500, 2500)}}, 2500, 2500, 0},
		{"non-deductible fund", store.Order{Donations: []store.DonationLine{gift(4000, false)}}, 4000, 0, 0},
		{"goods worth more than what is left after a refund", store.Order{Items: []store.ItemLine{item(1, 2500, 1000)}}, 1000, 2500, 0},
		{"item refunded in full", store.Order{Donations: []store.DonationLine{gift(5000, true)}, Items: []store.ItemLine{item(1, 2500, 0)}}, 5000, 0, 5000},
	} {
		tc.o.Currency = "USD"
		f := receiptFigures(tc.o)
		if f.Total != tc.total || f.Goods != tc.goods || f.Deductible != tc.deductible {
			t.Errorf("%s: total %d goods %d deductible %d, want %d %d %d", tc.name, f.Total, f.Goods, f.Deductible, tc.total, tc.goods, tc.deductible)
		}
	}
}

// TestIssueNumbers issues documents concurrently: every document gets one
// number, the numbers of a tenant have no gap, issuing again with the
// same figures changes nothing and with others is a new revision.
func TestIssueNumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := db.Open(ctx, testdb.New(t, testMigrations()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	tenant := uuid.New()
	const docs, tries = 20, 3
	var mu sync.Mutex
	got := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	for i := range docs * tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprint("order-", i%docs)
			is, err := st.Issue(ctx, tenant, store.KindReceipt, subject, []byte("v1"), "test")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if got[subject] == nil {
				got[subject] = map[int64]bool{}
			}
			got[subject][is.Number] = true
		}()
	}
	wg.Wait()
	var all []int
	for s, ns := range got {
		if len(ns) != 1 {
			t.Errorf("%s got numbers %v, want one", s, ns)
		}
		for n := range ns {
			all = append(all, int(n))
		}
	}
	sort.Ints(all)
	for i, n := range all {
		if n != i+1 {
			t.Fatalf("numbers %v, want 1..%d", all, docs)
		}
	}
	same, err := st.Issue(ctx, tenant, store.KindReceipt, "order-3", []byte("v1"), "test")
	if err != nil || same.Revision != 1 || same.Corrected() {
		t.Errorf("same figures: %+v, %v", same, err)
	}
	rev, err := st.Issue(ctx, tenant, store.KindReceipt, "order-3", []byte("v2"), "test")
	if err != nil || rev.Revision != 2 || !rev.Corrected() || rev.Number != same.Number || !rev.FirstIssuedAt.Equal(same.FirstIssuedAt) {
		t.Errorf("changed figures: %+v after %+v, %v", rev, same, err)
	}
	// Many at once: one unchanged, one revised, two new (numbers go on
	// after the 20), in the order asked.
	many, err := st.IssueMany(ctx, tenant, store.KindReceipt, []store.Issue{{Subject: "order-new-1", Hash: []byte("v1")},
		{Subject: "order-4", Hash: []byte("v1")}, {Subject: "order-5", Hash: []byte("v2")}, {Subject: "order-new-2", Hash: []byte("v1")}}, "test")
	if err != nil || len(many) != 4 {
		t.Fatalf("IssueMany: %+v, %v", many, err)
	}
	if many[0].Number != 21 || many[3].Number != 22 || many[0].Revision != 1 || many[1].Revision != 1 || many[2].Revision != 2 || many[1].Number == many[2].Number {
		t.Errorf("IssueMany: %+v", many)
	}
	// Another kind and another tenant count from 1.
	for _, k := range []struct {
		tenant uuid.UUID
		kind   string
	}{{tenant, store.KindStatement}, {uuid.New(), store.KindReceipt}} {
		if is, err := st.Issue(ctx, k.tenant, k.kind, "order-3", []byte("v1"), "test"); err != nil || is.Number != 1 {
			t.Errorf("%v %s: %+v, %v", k.tenant, k.kind, is, err)
		}
	}
}
