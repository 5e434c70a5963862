package paging

// Offset reads one page of a list paged by number only: fetch gets the
// page's limit and offset and returns its rows with the count of every
// match, and each row is converted for the response.
func Offset[R, W any](pg Page, fetch func(limit int32, offset int64) ([]R, int64, error), convert func(R) W) ([]W, int64, error) {
	rows, total, err := fetch(pg.Size, pg.Offset())
	if err != nil {
		return nil, 0, err
	}
	return Convert(rows, convert), total, nil
}

// Convert maps a page's rows to the response's items (never nil, so an
// empty page is an empty list on the wire).
func Convert[R, W any](rows []R, convert func(R) W) []W {
	out := make([]W, 0, len(rows))
	for _, r := range rows {
		out = append(out, convert(r))
	}
	return out
}

// Keyset reads one page of a list read by keyset after a token and by
// offset on its first page (the orders and imports lists). C is the list's
// token type, which embeds Position; key is the list's FilterKey. fetch
// reads the page: after is the token's cursor (nil without a token), and
// count says whether the matches must be counted (a token carries the
// count its listing started with, so a client walking every page counts
// once). cursor makes the token's sort key from the page's last row.
// Keyset returns the page, its total and the next page's token ("" on the
// last page); Resume says which tokens it refuses.
func Keyset[C any, PC interface {
	*C
	positioned
}, R any](pg *Page, key string, fetch func(after *C, count bool) ([]R, int64, error), cursor func(last R) C) ([]R, int64, string, error) {
	var tok C
	resumed, carried, err := Resume(pg, key, PC(&tok))
	if err != nil {
		return nil, 0, "", err
	}
	var after *C
	if resumed {
		after = &tok
	}
	rows, total, err := fetch(after, carried == 0)
	if err != nil {
		return nil, 0, "", err
	}
	if carried > 0 {
		total = carried
	}
	next := ""
	if len(rows) == int(pg.Size) && int64(pg.Number)*int64(pg.Size) < total {
		c := cursor(rows[len(rows)-1])
		*PC(&c).position() = Position{Page: pg.Number + 1, Filter: key, Total: total}
		next = EncodeToken(c)
	}
	return rows, total, next, nil
}
