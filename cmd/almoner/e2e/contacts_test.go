package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

func contactsPath(tenantID string) string { return "/api/tenants/" + tenantID + "/contacts" }

func contactPath(tenantID string, id any) string {
	return fmt.Sprintf("%s/%v", contactsPath(tenantID), id)
}

// janeBody is the reference system's create body, with our additions.
func janeBody() map[string]any {
	return map[string]any{
		"contactType": "Individual",
		"firstName":   "Jane",
		"lastName":    "Donor",
		"phones":      []any{map[string]any{"phoneNumber": "+1 (555) 123-4567", "phoneType": "Mobile", "isPrimary": true}},
		"emails": []any{
			map[string]any{"emailAddress": "jane@example.org", "emailType": "Personal", "isPrimary": true},
			map[string]any{"emailAddress": "jane@work.example", "emailType": "Work"},
		},
		"addresses": []any{map[string]any{"addressType": "Home", "isPrimary": true, "line1": "1 Main St", "line2": "Apt 2",
			"city": "Boston", "stateProvince": "MA", "postalCode": "02134", "country": "US"}},
		"tags":                     []string{"donor"},
		"communicationPreferences": map[string]any{"doNotCall": true},
		"externalId":               "crm-17",
		"notes":                    "Met at the gala.",
	}
}

func createContact(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, body any) map[string]any {
	t.Helper()
	return c.Do(t, "POST", contactsPath(tn.ID), tn.Key, body).Expect(t, http.StatusCreated).Map(t)
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

type problemDoc struct {
	Type, Title, Instance, TraceID string
	Status                         int
	Errors                         map[string][]string
}

func expectProblem(t *testing.T, r *apptest.Response, status int) problemDoc {
	t.Helper()
	r.Expect(t, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q for %d", ct, status)
	}
	var p problemDoc
	r.JSON(t, &p)
	return p
}

func TestContactWireShapeAndLifecycle(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)

	r := c.Do(t, "POST", contactsPath(tn.ID), tn.Key, janeBody()).Expect(t, http.StatusCreated)
	created := r.Map(t)
	wantKeys := "addresses,assignedUserId,communicationPreferences,contactType,createdAt,emails,externalId,firstName,id,isActive,lastName,notes,organizationName,phones,relationships,tags,updatedAt"
	if got := strings.Join(sortedKeys(created), ","); got != wantKeys {
		t.Errorf("contact keys = %s\nwant %s", got, wantKeys)
	}
	id := num(created["id"])
	if _, isNumber := created["id"].(float64); !isNumber || id <= 0 {
		t.Fatalf("id = %#v, want a JSON number", created["id"])
	}
	if created["contactType"] != "Individual" || created["organizationName"] != nil || created["isActive"] != true || r.Header.Get("ETag") != `"1"` {
		t.Errorf("created = %v, ETag %q", created, r.Header.Get("ETag"))
	}
	phone := created["phones"].([]any)[0].(map[string]any)
	if strings.Join(sortedKeys(phone), ",") != "id,isPrimary,phoneNumber,phoneType" || num(phone["id"]) <= 0 {
		t.Errorf("phone = %v", phone)
	}
	email := created["emails"].([]any)[1].(map[string]any)
	if strings.Join(sortedKeys(email), ",") != "emailAddress,emailType,id,isPrimary" || email["isPrimary"] != false {
		t.Errorf("email = %v", email)
	}
	addr := created["addresses"].([]any)[0].(map[string]any)
	if strings.Join(sortedKeys(addr), ",") != "addressType,city,country,id,isPrimary,line1,line2,postalCode,stateProvince" || addr["stateProvince"] != "MA" {
		t.Errorf("address = %v", addr)
	}
	if prefs := created["communicationPreferences"].(map[string]any); prefs["doNotCall"] != true || prefs["doNotEmail"] != false || prefs["doNotMail"] != false {
		t.Errorf("preferences = %v", prefs)
	}

	// GET: the same body and its ETag.
	got := c.Do(t, "GET", contactPath(tn.ID, id), tn.Key, nil).Expect(t, http.StatusOK)
	if got.Header.Get("ETag") != `"1"` || got.Map(t)["externalId"] != "crm-17" {
		t.Errorf("get: %s %s", got.Header.Get("ETag"), got.Body)
	}

	// PUT is a full replace. A stale If-Match is refused; the current one
	// applies and moves the ETag.
	body := janeBody()
	body["lastName"] = "Giver"
	body["emails"] = body["emails"].([]any)[:1]
	delete(body, "notes")
	p := expectProblem(t, c.Do(t, "PUT", contactPath(tn.ID, id), tn.Key, body, "If-Match", `"9"`), http.StatusConflict)
	if !strings.Contains(p.Title, `current ETag is "1"`) {
		t.Errorf("409 = %+v", p)
	}
	up := c.Do(t, "PUT", contactPath(tn.ID, id), tn.Key, body, "If-Match", `"1"`).Expect(t, http.StatusOK)
	updated := up.Map(t)
	if up.Header.Get("ETag") != `"2"` || updated["lastName"] != "Giver" || updated["notes"] != nil || len(updated["emails"].([]any)) != 1 {
		t.Errorf("updated: %s %v", up.Header.Get("ETag"), updated)
	}
	// The kept email kept its id.
	if num(updated["emails"].([]any)[0].(map[string]any)["id"]) != num(created["emails"].([]any)[0].(map[string]any)["id"]) {
		t.Error("the kept email got a new id")
	}
	// Deactivate (contacts are never deleted).
	body["isActive"] = false
	if c.Do(t, "PUT", contactPath(tn.ID, id), tn.Key, body).Expect(t, http.StatusOK).Map(t)["isActive"] != false {
		t.Error("not deactivated")
	}
	c.Do(t, "DELETE", contactPath(tn.ID, id), tn.Key, nil).Expect(t, http.StatusMethodNotAllowed)

	// The audit feed: newest first, the update with its changes.
	var feed struct {
		Items            []map[string]any
		TotalCount, Page int
		PageSize         int
		NextPageToken    string
	}
	c.Do(t, "GET", contactPath(tn.ID, id)+"/audit-logs", tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &feed)
	if feed.TotalCount != 3 || len(feed.Items) != 3 || feed.Page != 1 || feed.PageSize != 20 || feed.NextPageToken != "" {
		t.Fatalf("feed = %+v", feed)
	}
	wantRow := "action,changes,entityId,entityType,event,eventId,id,timestamp,userId"
	for _, it := range feed.Items {
		if strings.Join(sortedKeys(it), ",") != wantRow {
			t.Errorf("row keys %v", sortedKeys(it))
		}
	}
	createdRow, updateRow := feed.Items[2], feed.Items[1]
	if createdRow["event"] != "contact.created" || createdRow["action"] != "Created" || createdRow["changes"] != nil ||
		createdRow["entityId"] != fmt.Sprint(id) || !strings.HasPrefix(createdRow["userId"].(string), "api-key:ak_test_") {
		t.Errorf("created row = %v", createdRow)
	}
	changes, _ := updateRow["changes"].(map[string]any)
	if updateRow["event"] != "contact.updated" || changes == nil {
		t.Fatalf("update row = %v", updateRow)
	}
	if ln := changes["lastName"].(map[string]any); ln["old"] != "Donor" || ln["new"] != "Giver" {
		t.Errorf("lastName change = %v", ln)
	}
	if changes["emails"] == nil || changes["notes"] == nil || changes["phones"] != nil || changes["firstName"] != nil {
		t.Errorf("changes = %v", changes)
	}
	if feed.Items[0]["changes"].(map[string]any)["isActive"] == nil {
		t.Errorf("deactivation row = %v", feed.Items[0])
	}
}

func TestContactListAndSearch(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	var ids []int64
	for i := range 7 {
		body := map[string]any{"contactType": "Individual", "firstName": fmt.Sprintf("Ann%d", i), "lastName": "Lister",
			"emails": []any{map[string]any{"emailAddress": fmt.Sprintf("ann%d@list.example", i)}}}
		if i == 3 {
			body = map[string]any{"contactType": "Organization", "organizationName": "Lister Foundation", "tags": []string{"Grant-Maker"}}
		}
		ids = append(ids, num(createContact(t, c, tn, body)["id"]))
	}
	type page struct {
		Items          []map[string]any
		TotalCount     int
		Page, PageSize int
		NextPageToken  string
	}
	var p page
	r := c.Do(t, "GET", contactsPath(tn.ID)+"?pageSize=3", tn.Key, nil).Expect(t, http.StatusOK)
	if keys := strings.Join(sortedKeys(r.Map(t)), ","); keys != "items,nextPageToken,page,pageSize,totalCount" {
		t.Errorf("envelope keys %s", keys)
	}
	r.JSON(t, &p)
	if p.TotalCount != 7 || p.Page != 1 || p.PageSize != 3 || len(p.Items) != 3 || p.NextPageToken == "" {
		t.Fatalf("page 1 = %+v", p)
	}
	var seen []int64
	for _, it := range p.Items {
		seen = append(seen, num(it["id"]))
	}
	for p.NextPageToken != "" {
		c.Do(t, "GET", contactsPath(tn.ID)+"?pageSize=3&pageToken="+url.QueryEscape(p.NextPageToken), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
		for _, it := range p.Items {
			seen = append(seen, num(it["id"]))
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) || p.Page != 3 {
		t.Errorf("token pages %v (last page %d), want %v", seen, p.Page, ids)
	}
	for query, want := range map[string][]int64{
		"search=ann2":              {ids[2]},
		"search=LISTER+found":      {ids[3]},
		"search=ann5@list":         {ids[5]},
		"tag=grant-maker":          {ids[3]},
		"contactType=Organization": {ids[3]},
		"updatedSince=2000-01-01T00:00:00Z&pageSize=100": ids,
		"updatedSince=2999-01-01T00:00:00Z":              {},
		"isActive=false":                                 {},
	} {
		c.Do(t, "GET", contactsPath(tn.ID)+"?"+query, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
		var got []int64
		for _, it := range p.Items {
			got = append(got, num(it["id"]))
		}
		if fmt.Sprint(got) != fmt.Sprint(nonNil(want)) && !(len(got) == 0 && len(want) == 0) || p.TotalCount != len(want) {
			t.Errorf("%s: %v (total %d), want %v", query, got, p.TotalCount, want)
		}
	}
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func TestContactValidation(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	existing := num(createContact(t, c, tn, janeBody())["id"])
	with := func(change func(map[string]any)) map[string]any {
		b := janeBody()
		change(b)
		return b
	}
	cases := []struct {
		name, method, path string
		body               any
		want               map[string]string
	}{
		{"malformed JSON", "POST", contactsPath(tn.ID), `{"contactType": `, map[string]string{"$": "not valid JSON"}},
		{"missing type", "POST", contactsPath(tn.ID), with(func(b map[string]any) { delete(b, "contactType") }), map[string]string{"ContactType": "must not be empty"}},
		{"unknown type", "POST", contactsPath(tn.ID), with(func(b map[string]any) { b["contactType"] = "Household" }), map[string]string{"ContactType": "Individual or Organization"}},
		{"individual without last name or email", "POST", contactsPath(tn.ID), map[string]any{"contactType": "Individual", "firstName": "Jane"},
			map[string]string{"LastName": "must not be empty when the contact has no email"}},
		{"organization without name", "POST", contactsPath(tn.ID), map[string]any{"contactType": "Organization", "firstName": "Bob"},
			map[string]string{"OrganizationName": "must not be empty"}},
		{"bad email", "POST", contactsPath(tn.ID), with(func(b map[string]any) {
			b["emails"] = []any{map[string]any{"emailAddress": "jane(at)example.org"}}
		}), map[string]string{"Emails[0].EmailAddress": "not a valid email address"}},
		{"bad postal code and country", "POST", contactsPath(tn.ID), with(func(b map[string]any) {
			b["addresses"] = []any{
				map[string]any{"line1": "1 Main St", "postalCode": "02134", "country": "US"},
				map[string]any{"line1": "2 Side St", "postalCode": "12#45", "country": "UK"},
			}
		}), map[string]string{"Addresses[1].PostalCode": "Postal Code", "Addresses[1].Country": "ISO 3166-1 alpha-2"}},
		{"long name", "POST", contactsPath(tn.ID), with(func(b map[string]any) { b["firstName"] = strings.Repeat("a", 101) }), map[string]string{"FirstName": "100 characters or fewer"}},
		{"too many phones", "POST", contactsPath(tn.ID), with(func(b map[string]any) {
			var phones []any
			for i := range 11 {
				phones = append(phones, map[string]any{"phoneNumber": fmt.Sprintf("555-010-%04d", i)})
			}
			b["phones"] = phones
		}), map[string]string{"Phones": "10 items or fewer"}},
		{"wrong JSON type", "POST", contactsPath(tn.ID), with(func(b map[string]any) { b["tags"] = "donor" }), map[string]string{"Tags": "must be an array"}},
		{"unknown relationship", "POST", contactsPath(tn.ID), with(func(b map[string]any) {
			b["relationships"] = []any{map[string]any{"relatedContactId": 0, "relationshipType": "Spouse"}, map[string]any{"relatedContactId": 999999999, "relationshipType": "Spouse"}}
		}), map[string]string{"Relationships[0].RelatedContactId": "Related contact id must be greater than 0."}},
		{"related contact not found", "POST", contactsPath(tn.ID), with(func(b map[string]any) {
			b["relationships"] = []any{map[string]any{"relatedContactId": 999999999, "relationshipType": "Spouse"}}
		}), map[string]string{"Relationships[0].RelatedContactId": "was not found"}},
		{"contact id 0", "GET", contactPath(tn.ID, 0), nil, map[string]string{"ContactId": "Contact id must be greater than 0."}},
		{"update contact id 0", "PUT", contactPath(tn.ID, 0), janeBody(), map[string]string{"ContactId": "Contact id must be greater than 0."}},
		{"dashboard contact id 0", "GET", contactPath(tn.ID, 0) + "/dashboard", nil, map[string]string{"ContactId": "Contact id must be greater than 0."}},
		{"bad If-Match", "PUT", contactPath(tn.ID, existing), janeBody(), map[string]string{"If-Match": "quoted entity tags"}},
		{"page 0", "GET", contactsPath(tn.ID) + "?page=0", nil, map[string]string{"Page": "greater than or equal to 1"}},
		{"page size too big", "GET", contactsPath(tn.ID) + "?pageSize=101", nil, map[string]string{"PageSize": "less than or equal to 100"}},
		{"page not a number", "GET", contactsPath(tn.ID) + "?page=abc", nil, map[string]string{"Page": "must be an integer"}},
		{"bad page token", "GET", contactsPath(tn.ID) + "?pageToken=xyz", nil, map[string]string{"PageToken": "not a token"}},
		{"bad type filter", "GET", contactsPath(tn.ID) + "?contactType=Robot&search=" + strings.Repeat("s", 201), nil,
			map[string]string{"ContactType": "Individual or Organization", "Search": "200 characters"}},
		{"bad timestamp filter", "GET", contactsPath(tn.ID) + "?updatedSince=yesterday", nil, map[string]string{"UpdatedSince": "ISO 8601"}},
		{"audit page size", "GET", contactPath(tn.ID, existing) + "/audit-logs?pageSize=0", nil, map[string]string{"PageSize": "greater than or equal to 1"}},
		{"nothing to compare", "POST", contactsPath(tn.ID) + "/check-duplicates", map[string]any{"firstName": "Jane"},
			map[string]string{"": "Contact.NothingToCompare: Give an email"}},
		{"bad candidate email", "POST", contactsPath(tn.ID) + "/check-duplicates", map[string]any{"emails": []any{map[string]any{"emailAddress": "x@"}}},
			map[string]string{"Emails[0].EmailAddress": "not a valid email address"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			headers := []string{}
			if tc.name == "bad If-Match" {
				headers = []string{"If-Match", "v1"}
			}
			p := expectProblem(t, c.Do(t, tc.method, tc.path, tn.Key, tc.body, headers...), http.StatusBadRequest)
			if p.Type != "/errors/validation" || p.Title != "One or more validation errors occurred." || p.Status != 400 || len(p.TraceID) != 32 {
				t.Errorf("problem = %+v", p)
			}
			if len(p.Errors) != len(tc.want) {
				t.Errorf("errors = %v, want keys of %v", p.Errors, tc.want)
			}
			for k, frag := range tc.want {
				if msgs := p.Errors[k]; len(msgs) == 0 || !strings.Contains(msgs[0], frag) {
					t.Errorf("errors[%q] = %v, want it to mention %q", k, msgs, frag)
				}
			}
		})
	}
	// The reference's exact words for a zero id.
	p := expectProblem(t, c.Do(t, "GET", contactPath(tn.ID, 0), tn.Key, nil), http.StatusBadRequest)
	if msgs := p.Errors["ContactId"]; len(msgs) != 1 || msgs[0] != "Contact id must be greater than 0." {
		t.Errorf("ContactId = %v", msgs)
	}
	// Nothing was created by the refused bodies.
	var list struct{ TotalCount int }
	c.Do(t, "GET", contactsPath(tn.ID), tn.Key, nil).JSON(t, &list)
	if list.TotalCount != 1 {
		t.Errorf("%d contacts after refused creates", list.TotalCount)
	}
}

func TestContactScopesAndTenants(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	a, b := c.NewTenant(t), c.NewTenant(t)
	id := num(createContact(t, c, a, janeBody())["id"])
	// Ids are per tenant: B's first contact has A's id too. B makes five,
	// so its last is none of A's (A makes one more below).
	bBody := janeBody()
	bBody["lastName"] = "Bee"
	var bID int64
	for range 5 {
		bID = num(createContact(t, c, b, bBody)["id"])
	}
	// The same id in each tenant is each tenant's own contact.
	if got := c.Do(t, "GET", contactPath(a.ID, id), a.Key, nil).Expect(t, http.StatusOK).Map(t); got["lastName"] != "Donor" {
		t.Errorf("A's contact %d reads %v", id, got["lastName"])
	}
	if got := c.Do(t, "GET", contactPath(b.ID, id), b.Key, nil).Expect(t, http.StatusOK).Map(t); got["lastName"] != "Bee" {
		t.Errorf("B's contact %d reads %v", id, got["lastName"])
	}

	routes := []struct {
		method, path string
		body         any
		scope        string
	}{
		{"GET", contactsPath(a.ID), nil, "contacts:view"},
		{"GET", contactPath(a.ID, id), nil, "contacts:view"},
		{"GET", contactPath(a.ID, id) + "/dashboard", nil, "contacts:view"},
		{"POST", contactsPath(a.ID) + "/check-duplicates", janeBody(), "contacts:view"},
		{"POST", contactsPath(a.ID), janeBody(), "contacts:create"},
		{"PUT", contactPath(a.ID, id), janeBody(), "contacts:edit"},
		{"GET", contactPath(a.ID, id) + "/audit-logs", nil, "audit-logs:view"},
	}
	// A key with every scope but the one each route needs gets 403 naming it.
	for _, rt := range routes {
		var others []string
		for _, s := range []string{"contacts:view", "contacts:create", "contacts:edit", "audit-logs:view", "donations:view"} {
			if s != rt.scope {
				others = append(others, s)
			}
		}
		key := c.NewKey(t, a.ID, others...)
		p := expectProblem(t, c.Do(t, rt.method, rt.path, key, rt.body), http.StatusForbidden)
		if p.Title != "Missing required permission: "+rt.scope || p.Type != "/errors/forbidden" {
			t.Errorf("%s %s: %+v", rt.method, rt.path, p)
		}
		// And the scope alone is enough.
		want := http.StatusOK
		if rt.method == "POST" && !strings.HasSuffix(rt.path, "check-duplicates") {
			want = http.StatusCreated
		}
		c.Do(t, rt.method, rt.path, c.NewKey(t, a.ID, rt.scope), rt.body).Expect(t, want)
	}

	// B's contact read with A's key on A's path: 404, as is every other
	// route of it, and the contact is untouched.
	for _, rt := range []struct{ method, suffix string }{{"GET", ""}, {"PUT", ""}, {"GET", "/dashboard"}, {"GET", "/audit-logs"}} {
		var body any
		if rt.method == "PUT" {
			body = janeBody()
		}
		p := expectProblem(t, c.Do(t, rt.method, contactPath(a.ID, bID)+rt.suffix, a.Key, body), http.StatusNotFound)
		if p.Type != "/errors/not-found" {
			t.Errorf("%s %s: %+v", rt.method, rt.suffix, p)
		}
	}
	// A's key on B's path is 404 before any handler.
	c.Do(t, "GET", contactPath(b.ID, bID), a.Key, nil).Expect(t, http.StatusNotFound)
	// A path id that is not an integer does not resolve either.
	for _, bad := range []string{"abc", "1.5", "99999999999999999999", "check-duplicates"} {
		c.Do(t, "GET", contactPath(a.ID, bad), a.Key, nil).Expect(t, http.StatusNotFound)
	}
	c.Do(t, "GET", contactPath(a.ID, 987654321), a.Key, nil).Expect(t, http.StatusNotFound)
	// Without a key: 401.
	c.Do(t, "GET", contactsPath(a.ID), "", nil).Expect(t, http.StatusUnauthorized)
}

// TestContactIDsPerTenant: contact ids are numbered per tenant, so a
// tenant's ids tell nothing of the others' activity: A's second contact is
// its first + 1 however many contacts B created in between, and a tenant's
// first contact is 1, as are its first phone, email and address rows.
func TestContactIDsPerTenant(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	a, b := c.NewTenant(t), c.NewTenant(t)
	first := createContact(t, c, a, janeBody())
	for range 7 {
		createContact(t, c, b, janeBody())
	}
	second := createContact(t, c, a, janeBody())
	if num(first["id"]) != 1 || num(second["id"]) != num(first["id"])+1 {
		t.Errorf("A's contacts %v then %v with 7 of B's between, want 1 and 2", first["id"], second["id"])
	}
	rowIDs := func(contact map[string]any, list string) []int64 {
		var ids []int64
		for _, r := range contact[list].([]any) {
			ids = append(ids, num(r.(map[string]any)["id"]))
		}
		return ids
	}
	// janeBody has one phone, two emails and one address.
	for _, x := range []struct {
		list          string
		first, second []int64
	}{{"phones", []int64{1}, []int64{2}}, {"emails", []int64{1, 2}, []int64{3, 4}}, {"addresses", []int64{1}, []int64{2}}} {
		if got1, got2 := rowIDs(first, x.list), rowIDs(second, x.list); fmt.Sprint(got1, got2) != fmt.Sprint(x.first, x.second) {
			t.Errorf("A's %s ids %v then %v, want %v then %v", x.list, got1, got2, x.first, x.second)
		}
	}
	// B's own count went on meanwhile: its eighth contact is 8.
	if got := num(createContact(t, c, b, janeBody())["id"]); got != 8 {
		t.Errorf("B's eighth contact is %d", got)
	}
}

func TestContactDuplicatesRelationshipsDashboard(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t)
	org := createContact(t, c, tn, map[string]any{"contactType": "Organization", "organizationName": "Acme Trust"})
	body := janeBody()
	body["relationships"] = []any{map[string]any{"relatedContactId": org["id"], "relationshipType": "Employer"}}
	jane := createContact(t, c, tn, body)

	rels := jane["relationships"].([]any)
	rel := rels[0].(map[string]any)
	if len(rels) != 1 || strings.Join(sortedKeys(rel), ",") != "relatedContactId,relatedContactName,relatedContactType,relationshipType" ||
		rel["relationshipType"] != "Employer" || rel["relatedContactName"] != "Acme Trust" {
		t.Errorf("relationships = %v", rels)
	}
	orgNow := c.Do(t, "GET", contactPath(tn.ID, num(org["id"])), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if r := orgNow["relationships"].([]any); len(r) != 1 || r[0].(map[string]any)["relationshipType"] != "Employee" {
		t.Errorf("organization side = %v", r)
	}

	// Duplicates: same email (any case) and phone digits, and a similar
	// name at the same postal code.
	namesake := createContact(t, c, tn, map[string]any{"contactType": "Individual", "firstName": "Jayne", "lastName": "Donor",
		"addresses": []any{map[string]any{"line1": "9 Elm St", "postalCode": "02134"}}})
	var dup struct {
		Matches []struct {
			Contact       map[string]any
			Score         float64
			MatchedFields []string
		}
	}
	c.Do(t, "POST", contactsPath(tn.ID)+"/check-duplicates", tn.Key, map[string]any{
		"contactType": "Individual", "firstName": "Jane", "lastName": "Donor",
		"emails":    []any{map[string]any{"emailAddress": "JANE@EXAMPLE.ORG"}},
		"phones":    []any{map[string]any{"phoneNumber": "555 123 4567"}},
		"addresses": []any{map[string]any{"line1": "x", "postalCode": "02134-0001", "country": "US"}},
	}).Expect(t, http.StatusOK).JSON(t, &dup)
	if len(dup.Matches) != 2 {
		t.Fatalf("matches = %+v", dup)
	}
	if m := dup.Matches[0]; num(m.Contact["id"]) != num(jane["id"]) || m.Score != 0.99 || strings.Join(m.MatchedFields, ",") != "Email,Phone,Name,PostalCode" {
		t.Errorf("best = %+v", m)
	}
	if m := dup.Matches[1]; num(m.Contact["id"]) != num(namesake["id"]) || m.Score <= 0 || m.Score >= 0.8 || strings.Join(m.MatchedFields, ",") != "Name,PostalCode" {
		t.Errorf("second = %+v", m)
	}
	// excludeContactId leaves the contact itself out.
	c.Do(t, "POST", contactsPath(tn.ID)+"/check-duplicates?excludeContactId="+fmt.Sprint(num(jane["id"])), tn.Key,
		// The candidate is a contact about to be created: the document
		// requires its contactType, as for a create.
		map[string]any{"contactType": "Individual", "emails": []any{map[string]any{"emailAddress": "jane@example.org"}}}).Expect(t, http.StatusOK).JSON(t, &dup)
	if len(dup.Matches) != 0 {
		t.Errorf("excluded contact matched: %+v", dup)
	}

	// The dashboard: the orders service is a stub until orders exist, so
	// the giving lists are empty, never invented.
	d := c.Do(t, "GET", contactPath(tn.ID, num(jane["id"]))+"/dashboard", tn.Key, nil).Expect(t, http.StatusOK).Map(t)
	if keys := strings.Join(sortedKeys(d), ","); keys != "contact,givingTotals,organizations,recentOrders,recurringSchedules,relationships,tags" {
		t.Errorf("dashboard keys %s", keys)
	}
	if num(d["contact"].(map[string]any)["id"]) != num(jane["id"]) || len(d["givingTotals"].([]any)) != 0 || len(d["recentOrders"].([]any)) != 0 ||
		len(d["recurringSchedules"].([]any)) != 0 || fmt.Sprint(d["tags"]) != "[donor]" || len(d["organizations"].([]any)) != 1 || len(d["relationships"].([]any)) != 1 {
		t.Errorf("dashboard = %v", d)
	}
	c.Do(t, "GET", contactPath(tn.ID, 987654321)+"/dashboard", tn.Key, nil).Expect(t, http.StatusNotFound)
}

func postForm(t *testing.T, c *apptest.Cluster, body any, headers ...string) *apptest.Response {
	t.Helper()
	return c.Do(t, "POST", "/api/contact-form", "", body, headers...)
}

func formBody() map[string]any {
	return map[string]any{"name": "Ann Sender", "email": "ann@example.org", "message": "Please call me.", "organization": "Acme", "phone": "555-010-0000"}
}

func expectRateLimited(t *testing.T, r *apptest.Response) {
	t.Helper()
	r.Expect(t, http.StatusTooManyRequests)
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("429 Content-Type %q", ct)
	}
	if strings.TrimSpace(string(r.Body)) != `{"message":"Too many requests. Please try again later."}` {
		t.Errorf("429 body %s", r.Body)
	}
	for k := range r.Header {
		if k == "Retry-After" || strings.HasPrefix(k, "X-Ratelimit") {
			t.Errorf("429 has header %s", k)
		}
	}
}

func TestContactFormRateLimit(t *testing.T) {
	t.Parallel()
	// No trusted proxies: X-Forwarded-For is the client's own claim and is
	// ignored, so changing it does not escape the limit.
	c := apptest.Start(t, apptest.Options{})
	r := postForm(t, c, formBody()).Expect(t, http.StatusCreated)
	ack := r.Map(t)
	if strings.Join(sortedKeys(ack), ",") != "id,message" || ack["message"] == "" {
		t.Errorf("ack = %v", ack)
	}
	// A refused post counts too: floods of junk are limited as well.
	p := expectProblem(t, postForm(t, c, map[string]any{"name": "", "email": "nope", "message": strings.Repeat("m", 5001)}), http.StatusBadRequest)
	if len(p.Errors) != 3 || p.Errors["Name"] == nil || p.Errors["Email"] == nil || p.Errors["Message"] == nil {
		t.Errorf("form errors = %v", p.Errors)
	}
	for i := 3; i <= 5; i++ {
		postForm(t, c, formBody(), "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)).Expect(t, http.StatusCreated)
	}
	expectRateLimited(t, postForm(t, c, formBody(), "X-Forwarded-For", "198.51.100.77"))
	expectRateLimited(t, postForm(t, c, formBody()))
	// Only the form is limited; the rest of the API is not.
	tn := c.NewTenant(t)
	for range 7 {
		c.Do(t, "GET", contactsPath(tn.ID), tn.Key, nil).Expect(t, http.StatusOK)
	}
	// The client address stored is the connection's, not the header's.
	conn := dbConn(t, c.DatabaseURL)
	var ips []string
	rows, err := conn.Query(t.Context(), `SELECT DISTINCT client_ip FROM contacts.contact_form_submissions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ip string
		_ = rows.Scan(&ip)
		ips = append(ips, ip)
	}
	if fmt.Sprint(ips) != "[127.0.0.1]" {
		t.Errorf("stored client addresses %v", ips)
	}
}

func TestContactFormTrustedProxy(t *testing.T) {
	t.Parallel()
	// The test client connects from loopback, which is trusted here, so
	// X-Forwarded-For names the client: each address has its own counter.
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_TRUSTED_PROXIES": "127.0.0.0/8, ::1"}})
	for range 5 {
		postForm(t, c, formBody(), "X-Forwarded-For", "198.51.100.7").Expect(t, http.StatusCreated)
	}
	expectRateLimited(t, postForm(t, c, formBody(), "X-Forwarded-For", "198.51.100.7"))
	// The client cannot pick its address: hops left of the one the trusted
	// proxy appended are ignored.
	expectRateLimited(t, postForm(t, c, formBody(), "X-Forwarded-For", "1.2.3.4, 198.51.100.7"))
	postForm(t, c, formBody(), "X-Forwarded-For", "198.51.100.8").Expect(t, http.StatusCreated)
	// A client header named like the internal metadata key is dropped.
	expectRateLimited(t, postForm(t, c, formBody(), "X-Forwarded-For", "198.51.100.7", "X-Almoner-Client-Ip", "192.0.2.1"))
}
