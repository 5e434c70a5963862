package deploy

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// No container engine runs on the machines that test this repository, so
// the image is never built here. What can be checked without one is
// checked: the Dockerfile's structure (parsed with BuildKit's own parser),
// and that its build stage's command, run as written, makes a static
// binary that the distroless final stage can run.

// instruction is one Dockerfile line as BuildKit parses it.
type instruction struct {
	cmd   string // lower case: from, run, copy, user, …
	args  []string
	flags []string
	json  bool // exec form (["a", "b"])
}

type stage struct {
	base, name string
	body       []instruction
}

func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	res, err := parser.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var stages []stage
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, json: n.Attributes["json"]}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
		}
		if in.cmd == "from" {
			s := stage{base: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "as") {
				s.name = in.args[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

// checkImage returns what is wrong with a Dockerfile's stages for a
// production image, and the build stage's RUN command.
func checkImage(stages []stage) (problems []string, run string) {
	if len(stages) < 2 {
		return []string{fmt.Sprintf("%d stages: want a build stage and a runtime stage", len(stages))}, ""
	}
	build, final := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(final.base, "gcr.io/distroless/static") {
		problems = append(problems, fmt.Sprintf("runtime image %q: want distroless/static (no shell, no package manager)", final.base))
	}
	for _, in := range build.body {
		if in.cmd == "run" {
			run = strings.Join(in.args, " ")
		}
	}
	if !strings.Contains(run, "CGO_ENABLED=0") || !strings.Contains(run, "go build") {
		problems = append(problems, fmt.Sprintf("build command %q: want a static go build (CGO_ENABLED=0)", run))
	}
	var user, entrypoint *instruction
	copied := false
	for i, in := range final.body {
		switch in.cmd {
		case "run":
			problems = append(problems, fmt.Sprintf("RUN in the runtime stage (%q): it has no shell", in.args))
		case "user":
			user = &final.body[i]
		case "entrypoint":
			entrypoint = &final.body[i]
		case "copy":
			if len(in.flags) == 1 && in.flags[0] == "--from="+build.name && len(in.args) == 2 && in.args[1] == "/almoner" {
				copied = true
			}
		}
	}
	if !copied {
		problems = append(problems, fmt.Sprintf("the runtime stage does not COPY --from=%s the binary to /almoner", build.name))
	}
	if user == nil {
		problems = append(problems, "no USER in the runtime stage: it would run as root")
	} else {
		uid, _, _ := strings.Cut(user.args[0], ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			// A name needs /etc/passwd in the image, and the kubelet can
			// only enforce runAsNonRoot for a numeric user.
			problems = append(problems, fmt.Sprintf("USER %q: want a numeric non-root uid", user.args[0]))
		}
	}
	if entrypoint == nil || !entrypoint.json || len(entrypoint.args) == 0 || entrypoint.args[0] != "/almoner" {
		problems = append(problems, "ENTRYPOINT: want the exec form [\"/almoner\"] (the shell form needs a shell)")
	}
	return problems, run
}

// TestCheckImage: each rule of checkImage catches its fault.
func TestCheckImage(t *testing.T) {
	good := `FROM golang:1.26 AS build
RUN CGO_ENABLED=0 go build -o /out/almoner .
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/almoner /almoner
USER 65532:65532
ENTRYPOINT ["/almoner"]
`
	cases := []struct{ name, text, want string }{
		{"good", good, ""},
		{"one stage", "FROM golang:1.26\nRUN go build .\n", "stages"},
		{"debian runtime", strings.Replace(good, "gcr.io/distroless/static-debian12:nonroot", "debian:12", 1), "distroless"},
		{"cgo build", strings.Replace(good, "CGO_ENABLED=0 ", "", 1), "CGO_ENABLED=0"},
		{"root user", strings.Replace(good, "USER 65532:65532", "USER 0", 1), "non-root"},
		{"named user", strings.Replace(good, "USER 65532:65532", "USER nonroot", 1), "numeric"},
		{"no user", strings.Replace(good, "USER 65532:65532\n", "", 1), "no USER"},
		{"shell entrypoint", strings.Replace(good, `ENTRYPOINT ["/almoner"]`, "ENTRYPOINT /almoner serve", 1), "exec form"},
		{"run in runtime", good + "RUN echo hi\n", "RUN in the runtime"},
		{"binary not copied", strings.Replace(good, "COPY --from=build /out/almoner /almoner\n", "", 1), "COPY --from=build"},
	}
	for _, tc := range cases {
		problems, _ := checkImage(parseDockerfile(t, tc.text))
		got := strings.Join(problems, "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want one mentioning %q", tc.name, got, tc.want)
		}
	}
}

func TestDockerfile(t *testing.T) {
	text, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	problems, run := checkImage(parseDockerfile(t, string(text)))
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) > 0 {
		return
	}

	// The build stage's command, as written, from the repository root
	// (the stage's COPY . . and WORKDIR), writing where the runtime stage
	// copies from.
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the build command")
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "sh", "-c", strings.ReplaceAll(run, "/out/", out+"/"))
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build command failed: %v\n%s", err, b)
	}
	bin, err := elf.Open(filepath.Join(out, "almoner"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bin.Close() }()
	for _, p := range bin.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader; distroless/static has none")
		}
	}
	if libs, _ := bin.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v; distroless/static has no libc", libs)
	}
}
