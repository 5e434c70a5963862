package openapigen

import (
	"fmt"
	"regexp"

	"github.com/getkin/kin-openapi/openapi3"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pathVar matches a path template's variable with its optional segment
// pattern, `{tenant_id}` or `{tenant_id=*}`.
var pathVar = regexp.MustCompile(`\{([^}=]+)(=[^}]*)?\}`)

// rawResponse says what an RPC answering google.api.HttpBody sends: the
// service renders those bodies itself, so no message describes them.
type rawResponse struct {
	// uses are the messages the response refers to.
	uses []protoreflect.FullName
	// respond is the response, given its description.
	respond func(g *generator, desc string) *openapi3.Response
}

// rawResponses are the HttpBody RPCs by name; planResponse fails on one
// that is missing.
var rawResponses = map[protoreflect.Name]rawResponse{
	"RunReport":     reportRun,
	"RunReportType": reportRun,
	"ExportReport":  reportExport,
	// GetOrderReceipt answers by the request's Accept header.
	"GetOrderReceipt":    orderReceipt,
	"GetGivingStatement": givingStatement,
	// DownloadTaxStatementRun is a ZIP of PDFs or a CSV.
	"DownloadTaxStatementRun": taxStatementDownload,
	// GetBrandingLogo is the kept image.
	"GetBrandingLogo": attachmentless("image/png", "image/jpeg"),
	// PreviewDocumentTemplate is a PDF or, with format=html, HTML.
	"PreviewDocumentTemplate": attachmentless("application/pdf", "text/html"),
	// GetLetterRunDocument is the run's letters in one PDF.
	"GetLetterRunDocument": attachment("application/pdf"),
	// Fulfillment documents: packing slips and the pick list.
	"GetPackingSlip":     attachment("application/pdf"),
	"RenderPackingSlips": attachment("application/pdf"),
	"GetPickList":        attachment("text/csv", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
	// ExportCohort is the members as CSV or Excel.
	"ExportCohort": attachment("text/csv", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
}

const reportColumnName protoreflect.FullName = "almoner.reports.v1.ReportColumn"

// reportRunSchema is the name of the run document's component.
const reportRunSchema = "ReportRun"

// reportRun is services/reports/render's Run.JSON: the columns, one
// object per row keyed by column key, the totals (one row per currency),
// and the page.
var reportRun = rawResponse{
	uses: []protoreflect.FullName{reportColumnName},
	respond: func(g *generator, desc string) *openapi3.Response {
		return &openapi3.Response{Description: &desc, Content: openapi3.NewContentWithJSONSchemaRef(
			openapi3.NewSchemaRef("#/components/schemas/"+reportRunSchema, nil))}
	},
}

// reportRunComponent is the run document's schema.
func (g *generator) reportRunComponent() *openapi3.Schema {
	// One schema per type under anyOf rather than one type array
	// (["string", "number", "boolean", "null"]): the two say the same, and
	// oapi-codegen 2.8 reads a type array only as T or [T, "null"]; it
	// fails on this one (docs/openapi.md, Generated clients).
	cell := &openapi3.Schema{
		AnyOf: openapi3.SchemaRefs{
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNumber}}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeBoolean}}),
			openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}}),
		},
		Description: "A cell as its column's type says: Integer, Decimal and Percent are numbers, String and Date (YYYY-MM-DD) strings, Boolean a boolean; null when empty.",
	}
	row := openapi3.NewSchemaRef("", &openapi3.Schema{
		Type: &openapi3.Types{openapi3.TypeObject}, Description: "One row, keyed by column key.",
		AdditionalProperties: openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", cell)},
	})
	rows := func(d string) *openapi3.SchemaRef {
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray}, Items: row, Description: d})
	}
	integer := func(format, d string) *openapi3.SchemaRef {
		return openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeInteger}, Format: format, Description: d})
	}
	s := &openapi3.Schema{
		Type:        &openapi3.Types{openapi3.TypeObject},
		Description: "ReportRun is one page of a report run: its columns, its rows keyed by column key (amounts keep their currency's decimals), the totals of every row of the run, one row per currency, and the page served.",
		Properties: openapi3.Schemas{
			"columns": openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeArray},
				Items: g.schemas.ref(use{msg: reportColumnName, dir: response}), Description: "The columns, in order."}),
			"rows":          rows("The rows of this page."),
			"totals":        rows("The totals of every row of the run (not only this page), one row per currency."),
			"totalCount":    integer("int64", "TotalCount counts every row of the run."),
			"page":          integer("int32", "Page is the page served."),
			"pageSize":      integer("int32", "PageSize is the page size served."),
			"nextPageToken": openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}, Description: "NextPageToken continues after this page; empty on the last."}),
		},
		Required:             []string{"columns", "rows", "totals", "totalCount", "page", "pageSize", "nextPageToken"},
		AdditionalProperties: openapi3.AdditionalProperties{Has: ptr(false)},
	}
	return s
}

// reportExport is a file in the format the request asked for.
var reportExport = attachment("text/csv", "application/pdf", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")

// attachment is a file in one of mediaTypes, named in Content-Disposition.
func attachment(mediaTypes ...string) rawResponse {
	return rawResponse{
		respond: func(_ *generator, desc string) *openapi3.Response {
			content := openapi3.Content{}
			for _, mt := range mediaTypes {
				content[mt] = file(mt)
			}
			return &openapi3.Response{
				Description: &desc,
				Headers: openapi3.Headers{"Content-Disposition": &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
					Description: "attachment, with the file's name.", Required: true,
					Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}),
				}}}},
				Content: content,
			}
		},
	}
}

// file is the body of a file of mediaType: bytes, not JSON.
func file(mediaType string) *openapi3.MediaType {
	return &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", &openapi3.Schema{
		Type: &openapi3.Types{openapi3.TypeString}, ContentMediaType: mediaType,
	})}
}

const (
	receiptName   protoreflect.FullName = "almoner.reports.v1.Receipt"
	statementName protoreflect.FullName = "almoner.reports.v1.GivingStatement"
)

// document is a document as data (its message, written by the wire codec)
// or as a PDF, as the request's Accept header prefers; the PDF is named in
// Content-Disposition.
func document(msg protoreflect.FullName) rawResponse {
	return rawResponse{
		uses: []protoreflect.FullName{msg},
		respond: func(g *generator, desc string) *openapi3.Response {
			return &openapi3.Response{
				Description: &desc,
				Headers: openapi3.Headers{"Content-Disposition": &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
					Description: "With a PDF: inline, with the file's name.",
					Schema:      openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}}),
				}}}},
				Content: openapi3.Content{
					"application/json": &openapi3.MediaType{Schema: g.schemas.ref(use{msg: msg, dir: response})},
					"application/pdf":  file("application/pdf"),
				},
			}
		},
	}
}

// orderReceipt is an order's receipt; givingStatement a contact's
// statement of a year.
var (
	orderReceipt    = document(receiptName)
	givingStatement = document(statementName)
)

// taxStatementDownload is a run's statements as a ZIP of PDFs or a CSV.
var taxStatementDownload = attachment("application/zip", "text/csv")

// rawRequests are the media types of the RPCs whose request body is
// google.api.HttpBody (the gateway admits them besides JSON,
// gateway/body.go rawBodyRoutes); planBody fails on one that is missing.
var rawRequests = map[protoreflect.Name][]string{
	"PutBrandingLogo": {"image/png", "image/jpeg"},
}

// planRawBody describes a body of bytes in one of the RPC's media types.
func planRawBody(op *operation) error {
	types, ok := rawRequests[op.b.Method.Name()]
	if !ok {
		return fmt.Errorf("its body is google.api.HttpBody, and rawRequests does not say what it holds")
	}
	op.finish = func(o *openapi3.Operation) {
		content := openapi3.Content{}
		for _, mt := range types {
			content[mt] = file(mt)
		}
		o.RequestBody = &openapi3.RequestBodyRef{Value: &openapi3.RequestBody{
			Description: "The file's bytes, with its Content-Type.", Required: true, Content: content}}
	}
	return nil
}

// attachmentless is a file in one of mediaTypes, with no
// Content-Disposition (an image a page shows).
func attachmentless(mediaTypes ...string) rawResponse {
	return rawResponse{
		respond: func(_ *generator, desc string) *openapi3.Response {
			content := openapi3.Content{}
			for _, mt := range mediaTypes {
				content[mt] = file(mt)
			}
			return &openapi3.Response{Description: &desc, Content: content}
		},
	}
}
