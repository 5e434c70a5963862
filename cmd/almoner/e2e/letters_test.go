package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/mail/mailtest"
	"github.com/almoner/almoner/pkg/pdftext"
)

// letterDonor makes a contact (with an email at tag unless noEmail) and a
// 40.00 gift of it; it returns the gift's id.
func letterDonor(t *testing.T, c *apptest.Cluster, f orderFixture, name, email string, prefs map[string]any) string {
	t.Helper()
	body := map[string]any{"contactType": "Individual", "firstName": name, "lastName": "Giver", "communicationPreferences": prefs}
	if email != "" {
		body["emails"] = []any{map[string]any{"emailAddress": email, "emailType": "Personal", "isPrimary": true}}
	}
	id := c.Do(t, "POST", tPath(f.tn.ID, "/contacts"), f.tn.Key, body).Expect(t, http.StatusCreated).Map(t)["id"].(float64)
	o := f.cashOrder(40)
	o["contactId"] = id
	return c.Do(t, "POST", tPath(f.tn.ID, "/orders"), f.tn.Key, o).Expect(t, http.StatusCreated).Map(t)["id"].(string)
}

// awaitRun polls a letter run until it has finished.
func awaitRun(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		run := c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)
		if s := run["status"]; s == "succeeded" || s == "failed" || time.Now().After(deadline) {
			return run
		}
	}
}

// TestLetterRuns walks letter runs through the gateway against Mailpit:
// an email run of 23 gifts sends 20 messages with the PDF attached, from
// the organization's name, counts the 3 skipped by reason and
// acknowledges each emailed gift once; two overlapping PDF runs over the
// rest acknowledge nothing twice and their merged PDF prints the letters;
// refusals, the scope and the other tenant.
func TestLetterRuns(t *testing.T) {
	t.Parallel()
	pit := mailtest.Shared(t)
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{"ALMONER_SMTP_URL": pit.SMTPURL, "ALMONER_MAIL_INTERVAL": "20ms",
		"ALMONER_MAIL_RATE": "50", "ALMONER_LETTER_RUN_BATCH": "7"}})
	f := newOrderFixture(t, c)
	tn := f.tn
	c.Do(t, "PUT", tPath(tn.ID, "/organization-profile"), tn.Key, receiptProfile).Expect(t, http.StatusOK)
	tag := "letters-" + uuid.NewString()[:8]
	for i := range 20 {
		letterDonor(t, c, f, fmt.Sprintf("Donor%02d", i), fmt.Sprintf("%s-%02d@example.org", tag, i), nil)
	}
	letterDonor(t, c, f, "NoMail", "", nil)
	letterDonor(t, c, f, "Quiet", tag+"-quiet@example.org", map[string]any{"doNotEmail": true})
	letterDonor(t, c, f, "Private", tag+"-private@example.org", map[string]any{"doNotAcknowledge": true})

	var list struct {
		Items []map[string]any `json:"items"`
	}
	c.Do(t, "GET", tPath(tn.ID, "/document-templates?kind=acknowledgement"), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &list)
	tmpl := list.Items[0]["id"].(string)
	today := time.Now().In(mustLoc(t, "America/New_York")).Format(time.DateOnly)
	runs := tPath(tn.ID, "/letter-runs")
	start := func(channel string) string {
		body := map[string]any{"templateId": tmpl, "channel": channel, "markAcknowledged": true, "filter": map[string]any{"from": today, "to": today}}
		r := c.Do(t, "POST", runs, tn.Key, body).Expect(t, http.StatusAccepted).Map(t)
		if r["status"] != "queued" {
			t.Errorf("new run %v", r)
		}
		return r["id"].(string)
	}

	email := awaitRun(t, c, tn, start("email"))
	reasons, _ := email["skippedReasons"].(map[string]any)
	if email["status"] != "succeeded" || email["letters"] != float64(20) || email["emailed"] != float64(20) || email["skipped"] != float64(3) ||
		reasons["noEmail"] != float64(1) || reasons["doNotEmail"] != float64(1) || reasons["doNotAcknowledge"] != float64(1) {
		t.Fatalf("email run %v", email)
	}
	msgs := pit.Await(t, tag, 20)
	for _, m := range msgs {
		if len(m.Attachments) != 1 || m.Attachments[0].ContentType != "application/pdf" || m.From.Name != receiptProfile["legalName"] ||
			!strings.Contains(m.Text, "Thank you for your generous gift of USD 40.00") || !strings.Contains(m.HTML, "<p>") {
			t.Errorf("message %q from %v, attachments %v, text %q", m.Subject, m.From, m.Attachments, m.Text)
			break
		}
	}
	count := func(status string) float64 {
		return c.Do(t, "GET", tPath(tn.ID, "/orders?pageSize=100&acknowledgementStatus="+status), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["totalCount"].(float64)
	}
	if n, p := count("acknowledged"), count("pending"); n != 20 || p != 3 {
		t.Errorf("acknowledged %v, pending %v after the email run; want 20 and 3", n, p)
	}

	// Two PDF runs at once over what is left: NoMail's and Quiet's gifts
	// get one letter each between them; Private's is skipped by both.
	var wg sync.WaitGroup
	ids := make([]string, 2)
	for i := range ids {
		wg.Go(func() { ids[i] = start("pdf") })
	}
	wg.Wait()
	letters := 0.0
	for _, id := range ids {
		run := awaitRun(t, c, tn, id)
		if run["status"] != "succeeded" || run["skippedReasons"].(map[string]any)["doNotAcknowledge"] != float64(1) {
			t.Errorf("pdf run %v", run)
		}
		letters += run["letters"].(float64)
	}
	if n := count("acknowledged"); letters != 2 || n != 22 {
		t.Errorf("overlapping runs made %v letters, %v gifts acknowledged; want 2 and 22", letters, n)
	}
	for _, id := range ids {
		doc := c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", id, "/document"), tn.Key, nil).Expect(t, http.StatusOK)
		if got := pdfText(t, doc.Body); (strings.Contains(got, "NoMail") || strings.Contains(got, "Quiet")) != (letterCount(t, c, tn, id) > 0) {
			t.Errorf("run %s document text %q", id, got)
		}
	}

	// Events: a letter.created per letter; each run's last
	// letter_run.updated carries its counts.
	var created, ended int
	for deadline := time.Now().Add(10 * time.Second); (created < 22 || ended < 3) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		created, ended = 0, 0
		for _, raw := range readFeed(t, c, tn, "limit=1000&types=letter.created,letter_run.updated").Items {
			switch s := string(raw); {
			case strings.Contains(s, `"letter.created"`):
				created++
			case strings.Contains(s, `"letter_run.updated"`) && strings.Contains(s, `"skippedReasons"`) && strings.Contains(s, `"succeeded"`):
				ended++
			}
		}
	}
	if created != 22 || ended != 3 {
		t.Errorf("%d letter.created and %d final letter_run.updated events, want 22 and 3", created, ended)
	}

	e := errorsOf(t, c.Do(t, "POST", runs, tn.Key, map[string]any{"templateId": uuid.NewString(), "channel": "fax",
		"filter": map[string]any{"from": "2026-13-01", "to": today, "cohortId": "x"}}).Expect(t, http.StatusBadRequest))
	for _, k := range []string{"TemplateId", "Channel", "Filter.From", "Filter.CohortId"} {
		if len(e[k]) == 0 {
			t.Errorf("errors %v, want %s", e, k)
		}
	}
	narrow := c.NewKey(t, tn.ID, "donations:view", "tenant-settings:manage")
	c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", ids[0]), narrow, nil).Expect(t, http.StatusForbidden)
	c.Do(t, "POST", runs, narrow, map[string]any{"templateId": tmpl, "channel": "pdf", "filter": map[string]any{"from": today, "to": today}}).
		Expect(t, http.StatusForbidden)
	other := c.NewTenant(t)
	c.Do(t, "GET", tPath(other.ID, "/letter-runs/", ids[0]), other.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", tPath(other.ID, "/letter-runs/", ids[0], "/document"), other.Key, nil).Expect(t, http.StatusNotFound)
}

func letterCount(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, id string) float64 {
	return c.Do(t, "GET", tPath(tn.ID, "/letter-runs/", id), tn.Key, nil).Expect(t, http.StatusOK).Map(t)["letters"].(float64)
}

// pdfText is a PDF's text as pdftotext (poppler-utils) reads it.
func pdfText(t *testing.T, pdf []byte) string {
	t.Helper()
	return pdftext.Text(t, pdf)
}
