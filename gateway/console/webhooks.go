package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

type webhooksData struct {
	Webhooks   []webhook
	EventTypes []eventType
	Created    *webhook
	Form       webhook
	Chosen     map[string]bool
}

type webhookData struct {
	Webhook    webhook
	Deliveries []delivery
	Total      int
	EventTypes []eventType
}

func (c *Console) webhookRoutes() {
	m := c.mux
	base := Prefix + "/t/{tid}/webhooks"
	m.HandleFunc("GET "+base, c.webhooksPage)
	m.HandleFunc("POST "+base, c.webhooksCreate)
	m.HandleFunc("GET "+base+"/{wid}", c.webhookPage)
	m.HandleFunc("POST "+base+"/{wid}/test", c.webhookTest)
	m.HandleFunc("POST "+base+"/{wid}/replay", c.webhookReplay)
	m.HandleFunc("POST "+base+"/{wid}/deliveries/{did}/redeliver", c.webhookRedeliver)
	m.HandleFunc("GET "+base+"/{wid}/delete", c.webhookDeleteConfirm)
	m.HandleFunc("POST "+base+"/{wid}/delete", c.webhookDelete)
}

// webhooksList reads the endpoints and the event types.
func (c *Console) webhooksList(w http.ResponseWriter, r *http.Request, p *page) (*webhooksData, bool) {
	d := &webhooksData{Chosen: map[string]bool{}}
	res := c.get(r, tenantPath(p.Tenant.ID, "/webhooks"))
	if !res.ok() || res.decode(&d.Webhooks) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	if res := c.get(r, tenantPath(p.Tenant.ID, "/webhooks/event-types")); res.ok() {
		_ = res.decode(&d.EventTypes)
	}
	return d, true
}

func (c *Console) webhooksPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	p.Title = "Webhooks"
	if p.Data, ok = c.webhooksList(w, r, p); ok {
		c.render(w, r, http.StatusOK, "webhooks", p)
	}
}

// webhooksCreate registers an endpoint (POST …/webhooks) and shows its
// signing secret this once.
func (c *Console) webhooksCreate(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	p.Title = "Webhooks"
	_ = r.ParseForm()
	form := webhook{Name: strings.TrimSpace(r.PostForm.Get("name")), URL: strings.TrimSpace(r.PostForm.Get("url")),
		Description: strings.TrimSpace(r.PostForm.Get("description")), EventTypes: r.PostForm["eventType"]}
	res := c.send(r, http.MethodPost, tenantPath(p.Tenant.ID, "/webhooks"), map[string]any{
		"name": form.Name, "url": form.URL, "description": form.Description, "eventTypes": form.EventTypes})
	var created webhook
	status := http.StatusOK
	if !res.ok() || res.decode(&created) != nil {
		p.Error, status = res.message(), statusOf(res)
	}
	d, ok := c.webhooksList(w, r, p)
	if !ok {
		return
	}
	if created.Secret != "" {
		d.Created = &created
	} else {
		d.Form = form
		for _, e := range form.EventTypes {
			d.Chosen[e] = true
		}
	}
	p.Data = d
	c.render(w, r, status, "webhooks", p)
}

// webhookDetail reads one endpoint (from the list: there is no route for
// one) and its delivery log, newest first.
func (c *Console) webhookDetail(w http.ResponseWriter, r *http.Request, p *page) (*webhookData, bool) {
	list, ok := c.webhooksList(w, r, p)
	if !ok {
		return nil, false
	}
	d := &webhookData{EventTypes: list.EventTypes}
	wid := r.PathValue("wid")
	found := false
	for _, wh := range list.Webhooks {
		if wh.ID == wid {
			d.Webhook, found = wh, true
		}
	}
	if !found {
		p.Title, p.Data = "Not found", "There is no such endpoint."
		c.render(w, r, http.StatusNotFound, "message", p)
		return nil, false
	}
	var env envelope[delivery]
	res := c.get(r, tenantPath(p.Tenant.ID, "/webhooks/"+url.PathEscape(wid)+"/deliveries?pageSize=50"))
	if !res.ok() || res.decode(&env) != nil {
		c.refused(w, r, p, res)
		return nil, false
	}
	d.Deliveries, d.Total = env.Items, env.TotalCount
	p.Title = "Webhook " + d.Webhook.Name
	return d, true
}

func (c *Console) webhookPage(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	if p.Data, ok = c.webhookDetail(w, r, p); ok {
		c.render(w, r, http.StatusOK, "webhook", p)
	}
}

// webhookAction runs one POST on an endpoint and shows the endpoint's page
// with the outcome.
func (c *Console) webhookAction(w http.ResponseWriter, r *http.Request, apiPath string, body any, done func(result) string) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	res := c.send(r, http.MethodPost, tenantPath(p.Tenant.ID, "/webhooks/"+url.PathEscape(r.PathValue("wid"))+apiPath), body)
	status := http.StatusOK
	if res.ok() {
		p.Flash = done(res)
	} else {
		p.Error, status = res.message(), statusOf(res)
	}
	if p.Data, ok = c.webhookDetail(w, r, p); ok {
		c.render(w, r, status, "webhook", p)
	}
}

// webhookTest sends a test event (POST …/test) and says what the receiver
// answered.
func (c *Console) webhookTest(w http.ResponseWriter, r *http.Request) {
	c.webhookAction(w, r, "/test", nil, func(res result) string {
		var d delivery
		_ = res.decode(&d)
		switch {
		case d.StatusCode != nil:
			return fmt.Sprintf("Test event sent: the endpoint answered %d.", *d.StatusCode)
		case d.Error != "":
			return "Test event sent: " + d.Error
		}
		return "Test event sent."
	})
}

// webhookReplay replays a window of events (POST …/replay).
func (c *Console) webhookReplay(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{}
	for _, f := range []string{"since", "until"} {
		if v := r.PostFormValue(f); v != "" {
			t, err := time.Parse("2006-01-02T15:04", v)
			if err == nil {
				body[f] = t.UTC().Format(time.RFC3339)
			}
		}
	}
	c.webhookAction(w, r, "/replay", body, func(res result) string {
		var out struct {
			Enqueued int `json:"enqueued"`
		}
		_ = res.decode(&out)
		return fmt.Sprintf("%d events were queued for replay.", out.Enqueued)
	})
}

// webhookRedeliver sends one delivery again (POST …/redeliver).
func (c *Console) webhookRedeliver(w http.ResponseWriter, r *http.Request) {
	c.webhookAction(w, r, "/deliveries/"+url.PathEscape(r.PathValue("did"))+"/redeliver", nil, func(result) string {
		return "The delivery was sent again; its attempt is in the log."
	})
}

func (c *Console) webhookDeleteConfirm(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	d, ok := c.webhookDetail(w, r, p)
	if !ok {
		return
	}
	p.Title = "Delete a webhook endpoint"
	p.Data = confirmData{Question: "Delete the endpoint “" + d.Webhook.Name + "”?",
		Detail: "No more events are sent to " + d.Webhook.URL + ". This cannot be undone.",
		Action: consolePath(p.Tenant.ID, "/webhooks/"+url.PathEscape(d.Webhook.ID)+"/delete"), Button: "Delete the endpoint",
		Cancel: consolePath(p.Tenant.ID, "/webhooks/"+url.PathEscape(d.Webhook.ID))}
	c.render(w, r, http.StatusOK, "confirm", p)
}

func (c *Console) webhookDelete(w http.ResponseWriter, r *http.Request) {
	p, ok := c.tenantPage(w, r, "webhooks")
	if !ok {
		return
	}
	res := c.send(r, http.MethodDelete, tenantPath(p.Tenant.ID, "/webhooks/"+url.PathEscape(r.PathValue("wid"))), nil)
	if !res.ok() {
		p.Title, p.Error = "Webhooks", res.message()
		c.render(w, r, statusOf(res), "message", p)
		return
	}
	redirect(w, r, consolePath(p.Tenant.ID, "/webhooks"), "webhook-deleted")
}
