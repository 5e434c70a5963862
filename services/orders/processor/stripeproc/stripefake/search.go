package stripefake

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// searchIntents answers a PaymentIntent search of one account: the
// query language's metadata['key']:'value' clauses joined by AND (the only
// ones the fake understands; anything else is a 400), newest first,
// limit (1–100, 10 by default) per page, and data.latest_charge as the
// one expansion. Unlike Stripe's, the fake's index never lags.
func (s *Server) searchIntents(key string, form url.Values) (any, *apiErr) {
	match, aerr := parseSearch(form.Get("query"))
	if aerr != nil {
		return nil, aerr
	}
	limit, offset, aerr := searchPage(form)
	if aerr != nil {
		return nil, aerr
	}
	expandCharge := false
	for k, v := range form {
		if strings.HasPrefix(k, "expand[") {
			if v[0] != "data.latest_charge" {
				return nil, invalid(400, "", k, "stripefake expands only data.latest_charge in a search, not "+v[0]+".")
			}
			expandCharge = true
		}
	}
	var found []*intent
	for _, pi := range s.intents {
		if pi.key == key && match(pi.metadata) {
			found = append(found, pi)
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].seq > found[j].seq })
	data := []any{}
	for i := offset; i < len(found) && i < offset+limit; i++ {
		obj := s.renderIntent(found[i])
		if expandCharge && found[i].charge != "" {
			obj["latest_charge"] = renderCharge(found[i])
		}
		data = append(data, obj)
	}
	var next any
	more := offset+limit < len(found)
	if more {
		next = "page_" + strconv.Itoa(offset+limit)
	}
	return map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": more, "next_page": next, "data": data}, nil
}

// reClause is one clause of a search query the fake understands:
// metadata['key']:'value', with \' and \\ escapes in the value.
var reClause = regexp.MustCompile(`^metadata\['([^'\\]+)'\]:'((?:[^'\\]|\\.)*)'$`)

// parseSearch returns the test of a search query: every clause must hold.
func parseSearch(query string) (func(map[string]string) bool, *apiErr) {
	if strings.TrimSpace(query) == "" {
		return nil, invalid(400, "parameter_missing", "query", "Missing required param: query.")
	}
	want := map[string]string{}
	for _, clause := range strings.Split(query, " AND ") {
		m := reClause.FindStringSubmatch(strings.TrimSpace(clause))
		if m == nil {
			return nil, invalid(400, "", "query", "stripefake's search takes only metadata['key']:'value' clauses joined by AND, not "+clause+".")
		}
		want[m[1]] = strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[2])
	}
	return func(md map[string]string) bool {
		for k, v := range want {
			if got, ok := md[k]; !ok || got != v {
				return false
			}
		}
		return true
	}, nil
}

// searchPage reads a search's limit and page (the offset the fake's
// next_page names).
func searchPage(form url.Values) (limit, offset int, aerr *apiErr) {
	limit = 10
	if form.Has("limit") {
		n, err := strconv.Atoi(form.Get("limit"))
		if err != nil || n < 1 || n > 100 {
			return 0, 0, invalid(400, "", "limit", "This value must be between 1 and 100.")
		}
		limit = n
	}
	if form.Has("page") {
		n, err := strconv.Atoi(strings.TrimPrefix(form.Get("page"), "page_"))
		if err != nil || n < 0 || !strings.HasPrefix(form.Get("page"), "page_") {
			return 0, 0, invalid(400, "", "page", "Invalid page: "+form.Get("page"))
		}
		offset = n
	}
	return limit, offset, nil
}
