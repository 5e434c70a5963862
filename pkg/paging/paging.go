// Package paging validates page/pageSize/pageToken list parameters and
// makes the opaque cursor tokens of keyset pagination.
//
// Conventions (docs/conventions.md): `page` is 1-based (default 1; 0 or
// negative → 400 under Page), `pageSize` defaults per endpoint (20 for most
// lists) and is capped per endpoint (400 above the cap, under PageSize). A
// `pageToken` from a previous response's `nextPageToken` continues a keyset
// scan; it overrides `page`, so deep pages cost what the first one does.
package paging

import (
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/almoner/almoner/pkg/apperr"
)

// DefaultPageSize is the page size when a request names none.
const DefaultPageSize = 20

// Limits are one endpoint's page-size rules.
type Limits struct {
	Default int32
	Max     int32
}

// Standard is the default for list endpoints: 20 by default, at most 100.
var Standard = Limits{Default: DefaultPageSize, Max: 100}

// Page is a validated request for one page.
type Page struct {
	// Number is the 1-based page number served.
	Number int32
	// Size is the page size served.
	Size int32
	// Token is the decoded cursor payload, nil when paging by number.
	Token []byte
}

// Offset is the row offset of page-number paging.
func (p Page) Offset() int64 { return int64(p.Number-1) * int64(p.Size) }

// Parse validates the parameters. page and size are nil when absent.
func Parse(page, size *int32, token string, l Limits) (Page, error) {
	var v apperr.Violations
	p := Page{Number: 1, Size: l.Default}
	if page != nil {
		if *page < 1 {
			v.Add("Page", "'Page' must be greater than or equal to 1.")
		} else {
			p.Number = *page
		}
	}
	if size != nil {
		switch {
		case *size < 1:
			v.Add("PageSize", "'PageSize' must be greater than or equal to 1.")
		case *size > l.Max:
			v.Add("PageSize", "'PageSize' must be less than or equal to %d.", l.Max)
		default:
			p.Size = *size
		}
	}
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || len(b) < 2 || b[0] != tokenVersion {
			v.Add("PageToken", "'PageToken' is not a token this API issued.")
		} else {
			p.Token = b[1:]
		}
	}
	if err := v.Err(); err != nil {
		return Page{}, err
	}
	return p, nil
}

const tokenVersion = 1

// EncodeToken makes an opaque cursor token of v (the sort key of the last
// row served plus anything that must match on the next call). The token is
// not secret: every query still filters by the caller's tenant.
func EncodeToken(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // cursor values are plain structs we define
	}
	return base64.RawURLEncoding.EncodeToString(append([]byte{tokenVersion}, b...))
}

// ErrBadToken is returned by DecodeToken for a token that does not decode.
var ErrBadToken = errors.New("bad page token")

// DecodeToken decodes a Page.Token payload into v. A payload that does not
// fit v is reported as a 400 under PageToken.
func DecodeToken(payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return apperr.Invalid(apperr.Violation{Field: "PageToken", Message: "'PageToken' is not a token this API issued."})
	}
	return nil
}
