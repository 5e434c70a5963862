package reports

import (
	"context"
	"fmt"

	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/services/reports/store"
)

// cohortParam is the optional parameter of every report type whose rows
// name a contact (a ContactId column): it keeps the rows of the cohort's
// members, computed when the report runs (docs/cohorts.md).
var cohortParam = Param{Key: "CohortId", Type: ParamString,
	Description: "Keeps the rows of this cohort's members (a built-in cohort's name or a saved cohort's id)."}

func init() {
	for _, t := range Catalog {
		for _, c := range t.Columns {
			if c.Key == "ContactId" {
				t.Params = append(t.Params, cohortParam)
				break
			}
		}
	}
}

// cohortFilter narrows q to the members of the run's CohortId, when it
// has one: the cohort's member ids are read first and the report's rows
// kept by their ContactId. A cohort the tenant does not have is a 404.
func (s *Service) cohortFilter(ctx context.Context, p authctx.Principal, v Values, q store.Query) (store.Query, error) {
	id := v.Str(cohortParam.Key)
	if id == "" {
		return q, nil
	}
	cur, err := p.DefaultCurrency()
	if err != nil {
		cur = "USD"
	}
	ids, err := s.cohorts.Members(ctx, p.Tenant(), cur, id)
	if err != nil {
		return q, err
	}
	args := append(append([]any{}, q.Args...), append([]int64{}, ids...))
	// $1 is the tenant; Args are $2 onwards.
	q.SQL = fmt.Sprintf(`SELECT * FROM (%s) cohort_rows WHERE cohort_rows."ContactId" = ANY($%d::bigint[])`, q.SQL, len(args)+1)
	q.Args = args
	return q, nil
}
