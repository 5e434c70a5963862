package openapigen

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// swagger is what the generator reads from protoc-gen-openapiv2's Swagger
// 2.0 output: the words. Types, statuses and shapes come from the
// descriptors; the proto comments (without their (-- internal --) parts)
// and the openapiv2 annotations (summaries, response descriptions, the
// document's info) come from here.
type swagger struct {
	Info struct {
		Title       string `json:"title"`
		Description string `json:"description"`
		Version     string `json:"version"`
	} `json:"info"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths       map[string]map[string]swaggerOp `json:"paths"`
	Definitions map[string]swaggerSchema        `json:"definitions"`
}

type swaggerOp struct {
	OperationID string                     `json:"operationId"`
	Summary     string                     `json:"summary"`
	Description string                     `json:"description"`
	Parameters  []swaggerParam             `json:"parameters"`
	Responses   map[string]swaggerResponse `json:"responses"`
}

type swaggerParam struct {
	Name        string   `json:"name"`
	In          string   `json:"in"`
	Description string   `json:"description"`
	Type        string   `json:"type"`
	Required    bool     `json:"required"`
	Enum        []string `json:"enum"`
	// Items carries the enum of a repeated field's parameter.
	Items *swaggerSchema `json:"items"`
}

type swaggerResponse struct {
	Description string `json:"description"`
}

type swaggerSchema struct {
	// Required lists the properties a message's openapiv2_schema option
	// marks required (request bodies: what the server insists on).
	Required    []string                 `json:"required"`
	Title       string                   `json:"title"`
	Description string                   `json:"description"`
	Properties  map[string]swaggerSchema `json:"properties"`
	Enum        []string                 `json:"enum"`
	Items       *swaggerSchema           `json:"items"`
}

// text joins a title and a description as openapiv2 split one comment.
func text(title, description string) string {
	switch {
	case title == "":
		return unwrap(description)
	case description == "":
		return unwrap(title)
	}
	return unwrap(title) + "\n\n" + unwrap(description)
}

// unwrap joins the lines of each paragraph of a proto comment, which are
// wrapped at 80 columns in the source and not in a rendered page.
func unwrap(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

func parseSwagger(b []byte) (*swagger, error) {
	var s swagger
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read the Swagger 2.0 document: %w", err)
	}
	return &s, nil
}

// operation returns the Swagger operation of an RPC: openapiv2 names it
// <Service>_<Method>.
func (s *swagger) operation(m protoreflect.MethodDescriptor) (swaggerOp, bool) {
	id := string(m.Parent().Name()) + "_" + string(m.Name())
	for _, item := range s.Paths {
		for _, op := range item {
			if op.OperationID == id {
				return op, true
			}
		}
	}
	return swaggerOp{}, false
}

// tag returns the description openapiv2 gave a service (its comment).
func (s *swagger) tag(service protoreflect.Name) string {
	for _, t := range s.Tags {
		if t.Name == string(service) {
			return unwrap(t.Description)
		}
	}
	return ""
}

// definition returns the Swagger definition of a message. openapiv2 names
// it by the shortest package suffix that is unique (v1ApiKey,
// contactsV1Contact, almonerOrdersV1Address), nested messages with their
// parents' names joined; the properties must match, so a definition of
// another message of the same name is never taken.
func (s *swagger) definition(md protoreflect.MessageDescriptor) (swaggerSchema, bool) {
	name := ""
	for d := protoreflect.Descriptor(md); d != nil; d = d.Parent() {
		if _, ok := d.(protoreflect.FileDescriptor); ok {
			break
		}
		name = string(d.Name()) + name
	}
	pkg := strings.Split(string(md.ParentFile().Package()), ".")
	for i := len(pkg) - 1; i >= 0; i-- {
		prefix := pkg[i]
		for _, p := range pkg[i+1:] {
			prefix += strings.ToUpper(p[:1]) + p[1:]
		}
		if d, ok := s.Definitions[prefix+name]; ok && sameProperties(d, md) {
			return d, true
		}
	}
	return swaggerSchema{}, false
}

func sameProperties(d swaggerSchema, md protoreflect.MessageDescriptor) bool {
	for name := range d.Properties {
		if md.Fields().ByJSONName(name) == nil {
			return false
		}
	}
	return true
}

// bodyDefinition returns the definition openapiv2 made for a body of "*"
// whose request also has path fields: <Service><Method>Body.
func (s *swagger) bodyDefinition(m protoreflect.MethodDescriptor) (swaggerSchema, bool) {
	d, ok := s.Definitions[string(m.Parent().Name())+string(m.Name())+"Body"]
	return d, ok
}
