package contacts

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/services/contacts/store"
)

// Limits of a contact body. Strings are counted in characters; lists are
// capped so that one body stays a small, bounded write.
const (
	maxNameLength         = 100
	maxOrganizationLength = 200
	maxExternalIDLength   = 100
	maxNotesLength        = 4000
	maxLineLength         = 200
	maxCityLength         = 100
	maxStateLength        = 100
	maxRows               = 10 // phones, emails, addresses each
	maxTags               = 50
	maxTagLength          = 50
	maxRelationships      = 50
	maxSearchLength       = 200
)

// Enumerations accepted in bodies, matched ignoring case and written back
// in this spelling.
var (
	contactTypes      = []string{store.Individual, store.Organization}
	phoneTypes        = []string{"Mobile", "Home", "Work", "Fax", "Other"}
	emailTypes        = []string{"Personal", "Work", "Other"}
	addressTypes      = []string{"Home", "Work", "Billing", "Shipping", "Other"}
	relationshipTypes = []string{store.Spouse, store.HouseholdMember, store.Employer, store.Employee}
)

// defaultRowType is the type of a phone, email or address row sent without one.
const defaultRowType = "Other"

func path(list string, i int, prop string) string {
	return list + "[" + strconv.Itoa(i) + "]." + prop
}

// text trims s and checks its length and characters; multiline allows
// line breaks and tabs (notes, messages). It reports under field, naming
// the property label, and returns the trimmed text.
func text(v *apperr.Violations, field, label, s string, max int, multiline bool) string {
	s = strings.TrimSpace(s)
	if n := utf8.RuneCountInString(s); n > max {
		v.Add(field, "'%s' must be %d characters or fewer.", label, max)
		return s
	}
	for _, r := range s {
		// NUL cannot be stored in PostgreSQL text, and other control
		// characters in names only ever come from broken clients.
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t')) {
			v.Add(field, "'%s' must not contain control characters.", label)
			return s
		}
	}
	return s
}

// validateMode says which rules apply: a body that is stored, or a
// duplicate-check candidate, which only needs what it compares.
type validateMode int

const (
	modeStore validateMode = iota
	modeCandidate
)

// validateContact checks a contact body and returns it normalized for the
// store. self is the contact's own id on an update (0 otherwise).
func validateContact(in *contactsv1.ContactInput, mode validateMode, self int64) (store.Fields, error) {
	var v apperr.Violations
	f := store.Fields{IsActive: true}
	if in == nil {
		in = &contactsv1.ContactInput{}
	}
	switch t := normalize.OneOf(contactTypes, in.GetContactType()); {
	case t != "":
		f.Type = t
	case strings.TrimSpace(in.GetContactType()) == "" && mode == modeCandidate:
		f.Type = ""
	case strings.TrimSpace(in.GetContactType()) == "":
		v.Add("ContactType", "'Contact Type' must not be empty.")
	default:
		v.Add("ContactType", "'Contact Type' must be Individual or Organization.")
	}
	f.FirstName = text(&v, "FirstName", "First Name", in.GetFirstName(), maxNameLength, false)
	f.LastName = text(&v, "LastName", "Last Name", in.GetLastName(), maxNameLength, false)
	f.OrganizationName = text(&v, "OrganizationName", "Organization Name", in.GetOrganizationName(), maxOrganizationLength, false)
	f.ExternalID = text(&v, "ExternalId", "External Id", in.GetExternalId(), maxExternalIDLength, false)
	f.Notes = text(&v, "Notes", "Notes", in.GetNotes(), maxNotesLength, true)
	if in.IsActive != nil {
		f.IsActive = in.GetIsActive()
	}
	prefs := in.GetCommunicationPreferences()
	f.DoNotEmail, f.DoNotMail, f.DoNotCall = prefs.GetDoNotEmail(), prefs.GetDoNotMail(), prefs.GetDoNotCall()
	f.DoNotAcknowledge = prefs.GetDoNotAcknowledge()

	f.Emails = validateEmails(&v, in.GetEmails())
	f.Phones = validatePhones(&v, in.GetPhones())
	f.Addresses = validateAddresses(&v, in.GetAddresses())
	f.Tags = validateTags(&v, in.GetTags())
	if in.AssignedUserId != nil {
		if id, err := uuid.Parse(in.GetAssignedUserId()); err != nil {
			v.Add("AssignedUserId", assigneeMessage)
		} else {
			f.AssignedUserID = id.String()
		}
	}
	if mode == modeStore {
		f.Relationships = validateRelationships(&v, in.GetRelationships(), f.Type, self)
		switch f.Type {
		case store.Individual:
			if f.LastName == "" && len(in.GetEmails()) == 0 && !v.Has("LastName") {
				v.Add("LastName", "'Last Name' must not be empty when the contact has no email.")
			}
		case store.Organization:
			if f.OrganizationName == "" && !v.Has("OrganizationName") {
				v.Add("OrganizationName", "'Organization Name' must not be empty for an organization.")
			}
		}
	}
	if err := v.Err(); err != nil {
		return store.Fields{}, err
	}
	return f, nil
}

// rowCount reports a list longer than max and returns how many rows to
// check (none when the list is too long: its rows are not worth a message
// each).
func rowCount(v *apperr.Violations, field string, n, max int) int {
	if n > max {
		v.Add(field, "'%s' must hold %d items or fewer.", field, max)
		return 0
	}
	return n
}

func rowType(v *apperr.Violations, field, label, s string, options []string) string {
	if strings.TrimSpace(s) == "" {
		return defaultRowType
	}
	t := normalize.OneOf(options, s)
	if t == "" {
		v.Add(field, "'%s' must be one of %s.", label, strings.Join(options, ", "))
	}
	return t
}

func rowID(v *apperr.Violations, field, what string, id int64) int64 {
	if id < 0 {
		v.Add(field, "%s id must be greater than 0.", what)
	}
	return id
}

// primary keeps at most one primary row: a second one is an error, and a
// list without one gets its first row as primary.
func primary(v *apperr.Violations, list, what string, flags []bool) []bool {
	seen := false
	for i, p := range flags {
		if p && seen {
			v.Add(path(list, i, "IsPrimary"), "Only one %s can be primary.", what)
		}
		seen = seen || p
	}
	if !seen && len(flags) > 0 {
		flags[0] = true
	}
	return flags
}

func validateEmails(v *apperr.Violations, in []*contactsv1.Email) []store.Email {
	n := rowCount(v, "Emails", len(in), maxRows)
	out := make([]store.Email, 0, n)
	flags := make([]bool, 0, n)
	seen := map[string]int{}
	for i, e := range in[:n] {
		field := path("Emails", i, "EmailAddress")
		raw := strings.TrimSpace(e.GetEmailAddress())
		addr, key, ok := normalize.Email(raw)
		switch {
		case raw == "":
			v.Add(field, "'Email Address' must not be empty.")
		case !ok:
			v.Add(field, "'Email Address' is not a valid email address.")
		default:
			if j, dup := seen[key]; dup {
				v.Add(field, "'Email Address' repeats Emails[%d].", j)
			}
			seen[key] = i
		}
		out = append(out, store.Email{
			ID:      rowID(v, path("Emails", i, "Id"), "Email", e.GetId()),
			Address: addr, Key: key,
			Type: rowType(v, path("Emails", i, "EmailType"), "Email Type", e.GetEmailType(), emailTypes),
		})
		flags = append(flags, e.GetIsPrimary())
	}
	for i, p := range primary(v, "Emails", "email", flags) {
		out[i].IsPrimary = p
	}
	return out
}

func validatePhones(v *apperr.Violations, in []*contactsv1.Phone) []store.Phone {
	n := rowCount(v, "Phones", len(in), maxRows)
	out := make([]store.Phone, 0, n)
	flags := make([]bool, 0, n)
	seen := map[string]int{}
	for i, p := range in[:n] {
		field := path("Phones", i, "PhoneNumber")
		raw := strings.TrimSpace(p.GetPhoneNumber())
		number, key, ok := normalize.Phone(raw)
		switch {
		case raw == "":
			v.Add(field, "'Phone Number' must not be empty.")
		case !ok:
			v.Add(field, "'Phone Number' is not a valid phone number (7 to 15 digits, optionally with an extension).")
		default:
			if j, dup := seen[key]; dup {
				v.Add(field, "'Phone Number' repeats Phones[%d].", j)
			}
			seen[key] = i
		}
		out = append(out, store.Phone{
			ID:     rowID(v, path("Phones", i, "Id"), "Phone", p.GetId()),
			Number: number, Key: key,
			Type: rowType(v, path("Phones", i, "PhoneType"), "Phone Type", p.GetPhoneType(), phoneTypes),
		})
		flags = append(flags, p.GetIsPrimary())
	}
	for i, p := range primary(v, "Phones", "phone", flags) {
		out[i].IsPrimary = p
	}
	return out
}

func validateAddresses(v *apperr.Violations, in []*contactsv1.Address) []store.Address {
	n := rowCount(v, "Addresses", len(in), maxRows)
	out := make([]store.Address, 0, n)
	flags := make([]bool, 0, n)
	for i, a := range in[:n] {
		row := store.Address{
			ID:            rowID(v, path("Addresses", i, "Id"), "Address", a.GetId()),
			Type:          rowType(v, path("Addresses", i, "AddressType"), "Address Type", a.GetAddressType(), addressTypes),
			Line1:         text(v, path("Addresses", i, "Line1"), "Line 1", a.GetLine1(), maxLineLength, false),
			Line2:         text(v, path("Addresses", i, "Line2"), "Line 2", a.GetLine2(), maxLineLength, false),
			City:          text(v, path("Addresses", i, "City"), "City", a.GetCity(), maxCityLength, false),
			StateProvince: text(v, path("Addresses", i, "StateProvince"), "State Province", a.GetStateProvince(), maxStateLength, false),
		}
		if row.Line1 == "" && !v.Has(path("Addresses", i, "Line1")) {
			v.Add(path("Addresses", i, "Line1"), "'Line 1' must not be empty.")
		}
		if c := strings.TrimSpace(a.GetCountry()); c != "" {
			code, ok := normalize.Country(c)
			if !ok {
				v.Add(path("Addresses", i, "Country"), "'Country' must be an ISO 3166-1 alpha-2 code such as US.")
			}
			row.Country = code
		}
		if pc := strings.TrimSpace(a.GetPostalCode()); pc != "" {
			code, key, ok := normalize.PostalCode(pc, row.Country)
			if !ok {
				v.Add(path("Addresses", i, "PostalCode"), "'Postal Code' must be at most %d letters, digits, spaces or hyphens.", normalize.MaxPostalCodeLength)
			}
			row.PostalCode, row.PostalKey = code, key
		}
		out = append(out, row)
		flags = append(flags, a.GetIsPrimary())
	}
	for i, p := range primary(v, "Addresses", "address", flags) {
		out[i].IsPrimary = p
	}
	return out
}

// validateTags trims the tags and drops repeats (ignoring case, keeping
// the first spelling).
func validateTags(v *apperr.Violations, in []string) []string {
	n := rowCount(v, "Tags", len(in), maxTags)
	out := make([]string, 0, n)
	seen := map[string]bool{}
	for i, t := range in[:n] {
		field := "Tags[" + strconv.Itoa(i) + "]"
		t = text(v, field, "Tags", t, maxTagLength, false)
		if t == "" {
			if !v.Has(field) {
				v.Add(field, "A tag must not be empty.")
			}
			continue
		}
		if k := strings.ToLower(t); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	return out
}

func validateRelationships(v *apperr.Violations, in []*contactsv1.ContactRelationshipInput, selfType string, self int64) []store.Relationship {
	n := rowCount(v, "Relationships", len(in), maxRelationships)
	out := make([]store.Relationship, 0, n)
	seen := map[store.Relationship]int{}
	for i, r := range in[:n] {
		idField, typeField := path("Relationships", i, "RelatedContactId"), path("Relationships", i, "RelationshipType")
		rel := store.Relationship{RelatedID: r.GetRelatedContactId()}
		switch {
		case rel.RelatedID <= 0:
			v.Add(idField, "Related contact id must be greater than 0.")
		case rel.RelatedID == self:
			v.Add(idField, "A contact cannot be related to itself.")
		}
		t := normalize.OneOf(relationshipTypes, r.GetRelationshipType())
		switch {
		case strings.TrimSpace(r.GetRelationshipType()) == "":
			v.Add(typeField, "'Relationship Type' must not be empty.")
		case t == "":
			v.Add(typeField, "'Relationship Type' must be one of %s.", strings.Join(relationshipTypes, ", "))
		case t == store.Employer && selfType == store.Organization:
			v.Add(typeField, "Employer is for individuals: an organization lists its people as Employee.")
		case t == store.Employee && selfType == store.Individual:
			v.Add(typeField, "Employee is for organizations: an individual lists its organization as Employer.")
		}
		rel.Type = t
		if j, dup := seen[rel]; dup && t != "" && rel.RelatedID > 0 {
			v.Add(idField, "Relationship repeats Relationships[%d].", j)
		}
		seen[rel] = i
		out = append(out, rel)
	}
	return out
}

// refViolation turns a store.RefError into the 400 it stands for.
func refViolation(e *store.RefError) error {
	return apperr.Invalid(apperr.Violation{Field: path(e.List, e.Index, e.Prop), Message: e.Message})
}

// validContactID is the 400 of a contact id that cannot exist, in the
// reference system's words.
func validContactID(id int64) error {
	if id <= 0 {
		return apperr.Invalid(apperr.Violation{Field: "ContactId", Message: "Contact id must be greater than 0."})
	}
	return nil
}
