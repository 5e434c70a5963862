package letters

import (
	"testing"
	"time"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
)

// TestReadFilterWithoutFilter: a body without its filter is a 400 naming
// Filter.From, not a panic (the empty-body probe of
// TestRequiredAsDocumented found a nil dereference).
func TestReadFilterWithoutFilter(t *testing.T) {
	batch := "not-a-uuid"
	for _, tc := range []struct {
		name string
		f    *reportsv1.LetterRunFilter
		want string
	}{
		{"nil", nil, "Filter.From"},
		{"empty", &reportsv1.LetterRunFilter{}, "Filter.From"},
		{"bad batch", &reportsv1.LetterRunFilter{From: "2026-01-01", To: "2026-01-31", BatchId: &batch}, "Filter.BatchId"},
	} {
		var v apperr.Violations
		readFilter(tc.f, time.UTC, &Run{}, &v)
		if !v.Has(tc.want) {
			t.Errorf("%s: no violation under %s: %v", tc.name, tc.want, v.Err())
		}
	}
}
