package contacts

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/almoner/almoner/pkg/apperr"
)

// etag is the entity tag of a contact version: a strong tag, since the
// representation changes with every version.
func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// setETag sends the contact's version to the gateway, which returns it as
// the ETag header.
func setETag(ctx context.Context, version int64) {
	_ = grpc.SetHeader(ctx, metadata.Pairs("etag", etag(version)))
}

// ifMatch is a parsed If-Match header.
type ifMatch struct {
	present bool
	any     bool
	tags    []string
}

// matches reports whether version satisfies the header (RFC 9110 §13.1.1:
// "*" matches any current version; otherwise a strong comparison, so a weak
// W/"…" tag never matches).
func (m ifMatch) matches(version int64) bool {
	if !m.present || m.any {
		return true
	}
	want := etag(version)
	for _, t := range m.tags {
		if t == want {
			return true
		}
	}
	return false
}

// errBadIfMatch is the 400 of an If-Match header that is not a list of
// entity tags.
var errBadIfMatch = apperr.Invalid(apperr.Violation{Field: "If-Match", Message: `'If-Match' must be "*" or a list of quoted entity tags such as "3".`})

// maxIfMatchLength bounds the header we parse.
const maxIfMatchLength = 1024

// parseIfMatch reads the If-Match values the gateway forwarded as gRPC
// metadata ("if-match"); several header lines combine as one list.
func parseIfMatch(ctx context.Context) (ifMatch, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("if-match")
	if len(values) == 0 {
		return ifMatch{}, nil
	}
	return parseIfMatchValue(strings.Join(values, ","))
}

// parseIfMatchValue parses `*` or a comma-separated list of entity tags
// (`"3"`, `W/"3"`).
func parseIfMatchValue(h string) (ifMatch, error) {
	m := ifMatch{present: true}
	if len(h) > maxIfMatchLength {
		return ifMatch{}, errBadIfMatch
	}
	h = strings.TrimSpace(h)
	if h == "*" {
		m.any = true
		return m, nil
	}
	for _, part := range strings.Split(h, ",") {
		t := strings.TrimSpace(part)
		if t == "" {
			continue
		}
		weak := strings.HasPrefix(t, "W/")
		body := strings.TrimPrefix(t, "W/")
		if len(body) < 2 || body[0] != '"' || body[len(body)-1] != '"' || strings.ContainsAny(body[1:len(body)-1], "\" \t") {
			return ifMatch{}, errBadIfMatch
		}
		if !weak {
			m.tags = append(m.tags, body)
		}
	}
	if len(m.tags) == 0 && !strings.Contains(h, "W/") {
		return ifMatch{}, errBadIfMatch
	}
	return m, nil
}
