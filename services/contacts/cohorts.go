package contacts

import (
	"context"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/services/contacts/store"
)

// ReportsService is the reports service's name for Dial: it computes a
// cohort's members (GET /contacts?cohortId=).
const ReportsService = "reports"

// cohortPage asks the reports service for the page's member ids (in id
// order, after the token's last id or past the page's offset), outside
// any transaction, and narrows the list to them: contacts cannot read the
// reports' cohorts, and reports reads contacts through its view. The
// member count comes with the first page and travels in the token.
func (c *contactServer) cohortPage(ctx context.Context, f *store.ListFilter, page store.ListPage, total int64) (store.ListPage, int64, error) {
	p, _ := authctx.FromIncoming(ctx)
	conn, err := c.s.reports.Conn()
	if err != nil {
		return page, 0, err
	}
	callCtx, cancel := context.WithTimeout(authctx.NewOutgoingContext(traceid.Forward(ctx), p), c.s.cfg.GivingTimeout)
	defer cancel()
	resp, err := reportsv1.NewCohortServiceClient(conn).ListCohortMemberIds(callCtx, &reportsv1.ListCohortMemberIdsRequest{
		TenantId: p.TenantID, CohortId: f.CohortID, AfterId: page.AfterID, Offset: page.Offset,
		Limit: int32(page.Limit) + 1, WithCount: !page.SkipCount,
	})
	if err != nil {
		return page, 0, err
	}
	f.IDs = append([]int64{}, resp.GetContactIds()...)
	if !page.SkipCount {
		total = resp.GetTotalCount()
	}
	// The ids are the page: no offset or cursor on top of them, and the
	// count is the cohort's.
	return store.ListPage{Limit: page.Limit, SkipCount: true}, total, nil
}
