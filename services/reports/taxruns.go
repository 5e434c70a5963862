package reports

import (
	"archive/zip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"mime"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	typev1 "github.com/almoner/almoner/pkg/api/almoner/type/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	pkgmoney "github.com/almoner/almoner/pkg/money"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/pkg/wirejson"
	"github.com/almoner/almoner/services/reports/render"
	"github.com/almoner/almoner/services/reports/store"
)

type taxRunServer struct {
	reportsv1.UnimplementedTaxStatementServiceServer
	s *Service
}

// StartTaxStatementRun validates and queues a run; a replica's runner
// takes it (taxRunner).
func (x *taxRunServer) StartTaxStatementRun(ctx context.Context, req *reportsv1.StartTaxStatementRunRequest) (*reportsv1.StartTaxStatementRunResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TaxStatementsManage)
	if err != nil {
		return nil, err
	}
	tenant, err := tenantUUID(p)
	if err != nil {
		return nil, err
	}
	year, minimum, err := validateRun(req)
	if err != nil {
		return nil, err
	}
	prof, err := x.s.profile(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if err := missingProfileFields(prof); err != nil {
		return nil, err
	}
	from, to := yearBounds(year, location(prof))
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("reports: start tax statement run: %w", err)
	}
	run, err := x.s.store.CreateTaxRun(ctx, store.TaxRun{TenantID: tenant, ID: id, Year: year, Minimum: minimum, PeriodStart: from, PeriodEnd: to}, p.Actor())
	if err != nil {
		return nil, err
	}
	x.s.runner.poke()
	return &reportsv1.StartTaxStatementRunResponse{Run: taxRunToProto(run)}, nil
}

// validateRun checks the year and the minimum amount (a decimal, zero or
// more, at most three decimals).
func validateRun(req *reportsv1.StartTaxStatementRunRequest) (int, string, error) {
	var v apperr.Violations
	year := int(req.GetYear())
	if year < minStatementYear || year > maxStatementYear {
		v.Add("Year", "'Year' must be between %d and %d.", minStatementYear, maxStatementYear)
	}
	minimum := "0"
	if m := req.GetMinimumAmount(); m != nil {
		r, ok := new(big.Rat).SetString(m.GetValue())
		_, frac, _ := strings.Cut(m.GetValue(), ".")
		if !ok || r.Sign() < 0 || len(frac) > 3 {
			v.Add("MinimumAmount", "'MinimumAmount' must be an amount of zero or more, with at most 3 decimals.")
		} else {
			minimum = m.GetValue()
		}
	}
	return year, minimum, v.Err()
}

// GetTaxStatementRun reads a run.
func (x *taxRunServer) GetTaxStatementRun(ctx context.Context, req *reportsv1.GetTaxStatementRunRequest) (*reportsv1.GetTaxStatementRunResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TaxStatementsManage)
	if err != nil {
		return nil, err
	}
	run, err := x.s.loadRun(ctx, p, req.GetRunId())
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetTaxStatementRunResponse{Run: taxRunToProto(run)}, nil
}

func (s *Service) loadRun(ctx context.Context, p authctx.Principal, runID string) (store.TaxRun, error) {
	tenant, err := tenantUUID(p)
	if err != nil {
		return store.TaxRun{}, err
	}
	id, err := uuid.Parse(runID)
	if err != nil {
		return store.TaxRun{}, apperr.NotFound("Tax statement run")
	}
	run, err := s.store.TaxRun(ctx, tenant, id)
	return db.Found(run, err, apperr.NotFound("Tax statement run"))
}

func taxRunToProto(t store.TaxRun) *reportsv1.TaxStatementRun {
	out := &reportsv1.TaxStatementRun{Id: t.ID.String(), Status: t.Status, Year: int32(t.Year), MinimumAmount: &typev1.Decimal{Value: t.Minimum},
		Processed: int32(t.Processed), CreatedAt: timestamppb.New(t.CreatedAt)}
	if t.Total != nil {
		n := int32(*t.Total)
		out.Total = &n
	}
	if t.StartedAt != nil {
		out.StartedAt = timestamppb.New(*t.StartedAt)
	}
	if t.FinishedAt != nil {
		out.FinishedAt = timestamppb.New(*t.FinishedAt)
	}
	return out
}

// DownloadTaxStatementRun streams a succeeded run's statements: a ZIP of
// PDFs (made from the recorded statements as the ZIP is written) or a
// CSV.
func (x *taxRunServer) DownloadTaxStatementRun(req *reportsv1.DownloadTaxStatementRunRequest, stream grpc.ServerStreamingServer[httpbody.HttpBody]) error {
	ctx := stream.Context()
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.TaxStatementsManage)
	if err != nil {
		return err
	}
	format := strings.ToLower(req.GetFormat())
	if format == "" {
		format = "zip"
	}
	if format != "zip" && format != "csv" {
		return apperr.Invalid(apperr.Violation{Field: "Format", Message: "'Format' must be one of: zip, csv."})
	}
	run, err := x.s.loadRun(ctx, p, req.GetRunId())
	if err != nil {
		return err
	}
	if run.Status != "succeeded" {
		return apperr.Conflict("TaxStatementRun.NotFinished", fmt.Sprintf("The run is %s: its statements can be downloaded once it has succeeded.", run.Status))
	}
	prof, err := x.s.profile(ctx, run.TenantID)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("tax-statements-%d.%s", run.Year, format)
	if err := grpc.SetHeader(ctx, metadata.Pairs("content-disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))); err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	if format == "csv" {
		return x.s.writeRunCSV(ctx, run, &chunkWriter{stream: stream, contentType: "text/csv; charset=utf-8"})
	}
	return x.s.writeRunZip(ctx, run, prof, &chunkWriter{stream: stream, contentType: "application/zip"})
}

// writeRunZip writes one PDF per donor, named by statement number. The
// whole ZIP is made in a temporary file before its first byte is sent: a
// statement that fails to render is then an error the client receives as
// a problem document, never a 200 cut short (a PDF made while streaming
// failed after the previous ones had gone out). The spool costs disk
// (tens of kilobytes a donor), not memory, and is removed on return.
func (s *Service) writeRunZip(ctx context.Context, run store.TaxRun, prof store.Profile, cw *chunkWriter) error {
	spool, err := os.CreateTemp("", "almoner-tax-run-*.zip")
	if err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	defer func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
	}()
	if err := s.zipRun(ctx, run, prof, spool); err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	if _, err := io.Copy(cw, spool); err != nil {
		return err
	}
	return cw.flush()
}

// zipRun writes the run's statements as a ZIP of PDFs to w.
func (s *Service) zipRun(ctx context.Context, run store.TaxRun, prof store.Profile, w io.Writer) error {
	brand, err := s.brand.Brand(ctx, run.TenantID)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	err = s.store.TaxRunItems(ctx, run.TenantID, run.ID, func(it store.TaxRunItem) error {
		st := &reportsv1.GivingStatement{}
		if err := wirejson.Unmarshal(it.Statement, st); err != nil {
			return fmt.Errorf("read statement of contact %d: %w", it.ContactID, err)
		}
		f, err := zw.Create(it.StatementNumber + ".pdf")
		if err != nil {
			return err
		}
		d, err := s.statementPDF(ctx, run.TenantID, st, prof, &brand)
		if err != nil {
			return err
		}
		return render.WriteDocument(d, f)
	})
	if err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	return nil
}

// runCSVHeader is the CSV's first line.
var runCSVHeader = []string{"Statement number", "Contact ID", "Name", "Email", "Address", "Gift count", "Total", "Deductible"}

// writeRunCSV writes one row per donor; amounts of several currencies are
// joined with "; " ("USD 120.00; EUR 30.00").
func (s *Service) writeRunCSV(ctx context.Context, run store.TaxRun, cw *chunkWriter) error {
	w := csv.NewWriter(cw)
	if err := w.Write(runCSVHeader); err != nil {
		return err
	}
	err := s.store.TaxRunItems(ctx, run.TenantID, run.ID, func(it store.TaxRunItem) error {
		st := &reportsv1.GivingStatement{}
		if err := wirejson.Unmarshal(it.Statement, st); err != nil {
			return fmt.Errorf("read statement of contact %d: %w", it.ContactID, err)
		}
		var count int32
		var total, deductible []string
		for _, t := range st.GetTotals() {
			count += t.GetGiftCount()
			total = append(total, t.GetCurrency()+" "+t.GetTotalAmount().GetValue())
			deductible = append(deductible, t.GetCurrency()+" "+t.GetDeductibleAmount().GetValue())
		}
		d := st.GetDonor()
		return w.Write([]string{it.StatementNumber, strconv.FormatInt(it.ContactID, 10), neutralize(d.GetName()), neutralize(d.GetEmail()),
			neutralize(strings.Join(addressLines(d.GetAddress()), ", ")), strconv.Itoa(int(count)), strings.Join(total, "; "), strings.Join(deductible, "; ")})
	})
	if err != nil {
		return err
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("reports: download run: %w", err)
	}
	return cw.flush()
}

// neutralize quotes a text cell a spreadsheet would run as a formula, as
// report exports do (render: OWASP's rule).
func neutralize(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// minima converts the run's minimum into each currency's minor units,
// rounded up (a minimum of 0.5 in yen is 1).
func minima(minimum string, currencies []string) store.Minima {
	m := store.Minima{Currencies: currencies, Minor: make([]int64, len(currencies))}
	r, _ := new(big.Rat).SetString(minimum)
	for i, c := range currencies {
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(pkgmoney.Exponent(c))), nil)))
		q, rem := new(big.Int).QuoRem(scaled.Num(), scaled.Denom(), new(big.Int))
		if rem.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		m.Minor[i] = q.Int64()
	}
	return m
}
