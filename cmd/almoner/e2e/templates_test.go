package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/almoner/almoner/cmd/almoner/apptest"
)

// everyField is an acknowledgement body naming every merge field of its
// kind, one per line, each after a label pdftotext can find.
const everyField = `{{contact.salutation}},
first={{contact.firstName}} last={{contact.lastName}}
addr={{contact.address.line1}}|{{contact.address.line2}}|{{contact.address.city}}|{{contact.address.stateProvince}}|{{contact.address.postalCode}}|{{contact.address.country}}
amount={{gift.amount}} date={{gift.date}} fund={{gift.fund}} order={{gift.orderNumber}}
deductible={{gift.deductibleAmount}} goods={{gift.goodsAndServicesValue}}
tribute={{gift.tribute.type}} {{gift.tribute.name}}
org={{organization.legalName}} tax={{organization.taxId}} mail={{organization.email}} phone={{organization.phone}} web={{organization.website}}
sig={{organization.signatureName}} {{organization.signatureTitle}}
orgaddr={{organization.address.line1}}|{{organization.address.line2}}|{{organization.address.city}}|{{organization.address.stateProvince}}|{{organization.address.postalCode}}|{{organization.address.country}}
today={{today}}`

// TestDocumentTemplates walks templates through the gateway: the
// defaults, a template with every merge field previewed as a PDF for a
// real gift (pdftotext), the refusals with their line (syntax, unknown
// field, a partial, a loop over gifts inside itself), a would-be loop
// printed as text, the sanitized HTML preview, the receipt printing the
// tenant's receipt template above its legal lines, delete rules, the
// scope and the other tenant.
func TestDocumentTemplates(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	f := newOrderFixture(t, c)
	tn := f.tn
	base := tPath(tn.ID, "/document-templates")
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	gift := f.cashOrder(80)
	gift["donations"] = []any{map[string]any{"fundId": f.fund, "amount": 80, "tribute": map[string]any{"tributeType": "InMemoryOf", "name": "Ada"}}}
	order := c.Do(t, "POST", tPath(tn.ID, "/orders"), tn.Key, gift).Expect(t, http.StatusCreated).Map(t)["id"].(string)

	var list struct {
		Items []map[string]any `json:"items"`
	}
	c.Do(t, "GET", base, tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	defaults := map[string]string{}
	for _, it := range list.Items {
		if it["isDefault"] == true {
			defaults[it["kind"].(string)] = it["id"].(string)
		}
	}
	if len(list.Items) != 3 || len(defaults) != 3 {
		t.Fatalf("templates of a new tenant = %v", list.Items)
	}

	ack := map[string]any{"kind": "acknowledgement", "name": "Every field", "subject": "Thanks {{contact.firstName}}", "body": everyField, "format": "text"}
	created := c.Do(t, "POST", base, tn.Key, ack).Expect(t, http.StatusCreated).Map(t)
	id := created["id"].(string)
	pdf := c.Do(t, "POST", base+"/"+id+"/preview", tn.Key, map[string]any{"orderId": order}).Expect(t, http.StatusOK)
	checkUnicodePDF(t, "preview", pdf, []string{"DearJane,", "first=Janelast=Donor", "amount=USD80.00", "fund=General", "deductible=USD80.00",
		"goods=USD0.00", "tribute=inmemoryofAda", "org=Sociétéd'EntraideFrançoisetax=12-3456789", "sig=ZoëMüllerTrésorière", "orgaddr=12Ruedel'Église||Montréal|QC|H2X1Y4|CA",
		"ThanksJane"})

	for _, tc := range []struct{ body, want string }{
		{"Dear {{contact.firstName}},\n\n{{#gift.fund}}unclosed", "Line 3"},
		{"one\ntwo\nthree {{gift.amont}}", "Line 3: 'gift.amont'"},
		{"{{> /etc/passwd}}", "Line 1: Partials"},
	} {
		bad := map[string]any{"kind": "acknowledgement", "name": "Bad", "subject": "S", "body": tc.body}
		if e := errorsOf(t, c.Do(t, "POST", base, tn.Key, bad).Expect(t, http.StatusBadRequest)); len(e["Body"]) == 0 || !strings.Contains(e["Body"][0], tc.want) {
			t.Errorf("body %q: errors %v, want Body with %q", tc.body, e, tc.want)
		}
	}
	nested := map[string]any{"kind": "statement", "name": "Nested", "subject": "S", "body": "{{#gifts}}\n{{#gifts}}{{amount}}{{/gifts}}{{/gifts}}"}
	if e := errorsOf(t, c.Do(t, "POST", base, tn.Key, nested).Expect(t, http.StatusBadRequest)); len(e["Body"]) == 0 || !strings.HasPrefix(e["Body"][0], "Line 2") {
		t.Errorf("nested gifts: errors %v", e)
	}
	// Mustache has no loop of its own: a Liquid loop is only text.
	loop := map[string]any{"kind": "acknowledgement", "name": "Loop", "subject": "S", "format": "markdown",
		"body": "{% for i in (1..1000000) %}x{% endfor %}\n\n**bold** <script>alert(1)</script> [x](javascript:alert(1)) {{contact.firstName}}"}
	loopID := c.Do(t, "POST", base, tn.Key, loop).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	html := string(c.Do(t, "POST", base+"/"+loopID+"/preview?format=html", tn.Key, map[string]any{}).Expect(t, http.StatusOK).Body)
	if !strings.Contains(html, "{% for i in (1..1000000) %}x{% endfor %}") || strings.Contains(html, "<script") ||
		strings.Contains(html, "javascript:") || !strings.Contains(html, "<strong>bold</strong>") {
		t.Errorf("html preview = %s", html)
	}

	// The receipt prints the tenant's receipt template, then the legal lines.
	rcpt := map[string]any{"name": "Receipt", "subject": "Reçu {{gift.orderNumber}}", "body": "Merci {{contact.firstName}} pour {{gift.amount}}.", "format": "text"}
	c.Do(t, "PUT", base+"/"+defaults["receipt"], tn.Key, rcpt).Expect(t, http.StatusOK)
	receipt := c.Do(t, "GET", tPath(tn.ID, "/orders/", order, "/receipt"), tn.Key, nil, "Accept", "application/pdf").Expect(t, http.StatusOK)
	checkUnicodePDF(t, "receipt", receipt, []string{"MerciJanepourUSD80.00.", "Reçu", "Nogoodsorserviceswereprovided", "Deductibleamount"})

	c.Do(t, "DELETE", base+"/"+defaults["receipt"], tn.Key, nil).Expect(t, http.StatusBadRequest)
	c.Do(t, "DELETE", base+"/"+loopID, tn.Key, nil).Expect(t, http.StatusNoContent)
	c.Do(t, "GET", base+"/"+loopID, tn.Key, nil).Expect(t, http.StatusNotFound)

	narrow := c.NewKey(t, tn.ID, "tenant-settings:manage", "donations:view")
	for _, m := range []string{"GET", "DELETE"} {
		r := c.Do(t, m, base+"/"+id, narrow, nil)
		if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "documents:manage") {
			t.Errorf("%s without documents:manage: %d %s", m, r.Status, r.Body)
		}
	}
	other := c.NewTenant(t)
	c.Do(t, "GET", base+"/"+id, other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "POST", base+"/"+id+"/preview", other.Key, map[string]any{}).Expect(t, http.StatusNotFound)
	otherBase := tPath(other.ID, "/document-templates")
	otherID := c.Do(t, "POST", otherBase, other.Key, ack).Expect(t, http.StatusCreated).Map(t)["id"].(string)
	// Another tenant's gift is no gift of this tenant.
	c.Do(t, "POST", otherBase+"/"+otherID+"/preview", other.Key, map[string]any{"orderId": order}).Expect(t, http.StatusNotFound)
}
