package paging

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/almoner/almoner/pkg/apperr"
)

// Position is what every list's keyset token carries besides its sort
// key: the page number it continues at, the fingerprint of the list it was
// made for (FilterKey) and the total counted when the listing started
// (so every page reports the same totalCount). A list's token type embeds
// it.
type Position struct {
	Page   int32  `json:"p"`
	Filter string `json:"f"`
	Total  int64  `json:"n,omitempty"`
}

func (p *Position) position() *Position { return p }

// positioned is a token type that embeds Position.
type positioned interface{ position() *Position }

// Resume reads pg.Token into token, which must embed Position, and checks
// that it was made for the list whose FilterKey is key. It sets pg.Number
// to the token's page and reports whether there was a token and the total
// it carries. A token made for other filters or another page size is a
// 400 under PageToken.
func Resume(pg *Page, key string, token positioned) (resumed bool, total int64, err error) {
	if pg.Token == nil {
		return false, 0, nil
	}
	if err := DecodeToken(pg.Token, token); err != nil {
		return false, 0, err
	}
	p := token.position()
	if p.Filter != key || p.Page < 2 || p.Total < 0 {
		return false, 0, apperr.Invalid(apperr.Violation{Field: "PageToken",
			Message: "'PageToken' was made for other filters or another page size; send the same ones, or start again without it."})
	}
	pg.Number = p.Page
	return true, p.Total, nil
}

// FilterKey fingerprints a list: a token is valid for the list it was
// made for, the same filter values (each given as text; TimeKey and
// friends make them) and the same page size (a page number means nothing
// with another). The values are joined with NUL, which no request value
// holds (the gateway refuses it in every string); the key is the one the
// lists made before it was shared, so their tokens stay valid.
func FilterKey(size int32, filters ...string) string {
	parts := append(filters, fmt.Sprint(size))
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return fmt.Sprintf("%x", sum)[:16]
}

// TimeKey is an optional time bound as FilterKey text ("" when absent).
func TimeKey(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// TimeBound reads a list's optional date filter: a date (midnight UTC) or
// an RFC 3339 time; "" is no bound. Anything else is added to v under
// field.
func TimeBound(v *apperr.Violations, field, s string) *time.Time {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t
		}
	}
	v.Add(field, "'%s' must be a date (2026-04-12) or an RFC 3339 time.", field)
	return nil
}
