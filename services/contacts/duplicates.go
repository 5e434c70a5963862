package contacts

import (
	"math"
	"sort"

	"github.com/almoner/almoner/services/contacts/store"
)

// ranked is one contact's duplicate evidence, scored.
type ranked struct {
	id     int64
	score  float64
	fields []string
}

// rankDuplicates combines the hits per contact into a score (see the
// weights above) and sorts best first, then by id for a stable order.
func rankDuplicates(hits []store.Hit) []ranked {
	type evidence struct {
		email, phone bool
		name         float64
	}
	by := map[int64]*evidence{}
	for _, h := range hits {
		e := by[h.ContactID]
		if e == nil {
			e = &evidence{}
			by[h.ContactID] = e
		}
		switch h.Field {
		case "Email":
			e.email = true
		case "Phone":
			e.phone = true
		case "Name":
			e.name = math.Max(e.name, h.Similarity)
		}
	}
	out := make([]ranked, 0, len(by))
	for id, e := range by {
		miss := 1.0
		var fields []string
		if e.email {
			miss *= 1 - weightEmail
			fields = append(fields, "Email")
		}
		if e.phone {
			miss *= 1 - weightPhone
			fields = append(fields, "Phone")
		}
		if e.name > 0 {
			miss *= 1 - weightName*math.Min(e.name, 1)
			fields = append(fields, "Name", "PostalCode")
		}
		out = append(out, ranked{id: id, score: math.Round((1-miss)*100) / 100, fields: fields})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].id < out[j].id
	})
	return out
}
