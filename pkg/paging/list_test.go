package paging

import (
	"errors"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
)

type numCursor struct {
	After int `json:"a"`
	Position
}

// rowsFrom is a list of n rows 1..n read by keyset or offset, as a store
// would read it.
func rowsFrom(n int, counted *bool) func(limit int32, offset int64) func(after *numCursor, count bool) ([]int, int64, error) {
	return func(limit int32, offset int64) func(after *numCursor, count bool) ([]int, int64, error) {
		return func(after *numCursor, count bool) ([]int, int64, error) {
			*counted = count
			start := int(offset)
			if after != nil {
				start = after.After
			}
			var out []int
			for i := start + 1; i <= n && len(out) < int(limit); i++ {
				out = append(out, i)
			}
			total := int64(-1)
			if count {
				total = int64(n)
			}
			return out, total, nil
		}
	}
}

func TestKeysetWalksEveryPage(t *testing.T) {
	cases := []struct {
		rows, size int
		wantPages  int
	}{
		{0, 2, 1}, {1, 2, 1}, {2, 2, 1}, {3, 2, 2}, {5, 2, 3}, {6, 3, 2},
	}
	for _, c := range cases {
		var counted bool
		var got []int
		token, pages := "", 0
		for {
			pg, err := Parse(nil, ptr(int32(c.size)), token, Standard)
			if err != nil {
				t.Fatalf("%+v: parse: %v", c, err)
			}
			rows, total, next, err := Keyset(&pg, "k", rowsFrom(c.rows, &counted)(pg.Size, pg.Offset()),
				func(last int) numCursor { return numCursor{After: last} })
			if err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
			pages++
			if total != int64(c.rows) || counted != (pages == 1) {
				t.Fatalf("%+v page %d: total %d counted %v", c, pages, total, counted)
			}
			got = append(got, rows...)
			if token = next; token == "" {
				break
			}
		}
		if pages != c.wantPages || len(got) != c.rows {
			t.Errorf("%+v: %d pages, %d rows", c, pages, len(got))
		}
	}
}

func TestKeysetRefusesAnotherListsToken(t *testing.T) {
	tok := EncodeToken(numCursor{After: 2, Position: Position{Page: 2, Filter: "other", Total: 5}})
	pg, err := Parse(nil, nil, tok, Standard)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Keyset(&pg, "k", func(*numCursor, bool) ([]int, int64, error) { return nil, 0, nil },
		func(last int) numCursor { return numCursor{After: last} })
	if !apperr.IsKind(err, apperr.KindInvalid) {
		t.Fatalf("err = %v, want invalid", err)
	}
}

func TestOffsetConverts(t *testing.T) {
	boom := errors.New("boom")
	items, total, err := Offset(Page{Number: 2, Size: 3}, func(limit int32, offset int64) ([]int, int64, error) {
		if limit != 3 || offset != 3 {
			t.Fatalf("limit %d offset %d", limit, offset)
		}
		return []int{4, 5}, 5, nil
	}, func(i int) string { return string(rune('a' + i)) })
	if err != nil || total != 5 || len(items) != 2 || items[0] != "e" {
		t.Fatalf("got %v %d %v", items, total, err)
	}
	if _, _, err := Offset(Page{Number: 1, Size: 3}, func(int32, int64) ([]int, int64, error) { return nil, 0, boom },
		func(i int) int { return i }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if got := Convert([]int(nil), func(i int) int { return i }); got == nil {
		t.Fatal("Convert(nil) is nil, want an empty list")
	}
}
