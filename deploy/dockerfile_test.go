package deploy

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/almoner/almoner/deploy/image"
	"github.com/almoner/almoner/deploy/image/imagetest"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// No container engine runs on the machines that test this repository, so
// the Dockerfile's image is never built here. What can be checked without
// one is checked: the Dockerfile's structure (parsed with BuildKit's own
// parser), and that its build stage's command, run as written, makes a
// static binary that the distroless final stage can run. `make image`
// builds the image without an engine (deploy/image): TestDockerfile builds
// it from that binary and holds it to the Dockerfile's runtime contract,
// and TestImageBuildCommand holds its build command to the Dockerfile's.

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
	stages := parseDockerfile(t, string(text))
	problems, run := checkImage(stages)
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

	// make image's image, from this binary rather than a second build.
	t.Run("image", func(t *testing.T) {
		checkEngineFreeImage(t, stages[len(stages)-1], filepath.Join(out, "almoner"))
	})
}

// runtimeContract is what a Dockerfile's final stage declares of how the
// container runs, in an image config's terms.
type runtimeContract struct {
	User       string
	Ports      []string // sorted, with their protocol: 8080/tcp
	Entrypoint []string
	Cmd        []string
}

func contractOf(final stage) runtimeContract {
	var c runtimeContract
	for _, in := range final.body {
		switch in.cmd {
		case "user":
			c.User = in.args[0]
		case "expose":
			for _, p := range in.args {
				if !strings.Contains(p, "/") {
					p += "/tcp" // Docker's default protocol
				}
				c.Ports = append(c.Ports, p)
			}
		case "entrypoint":
			c.Entrypoint = in.args
		case "cmd":
			c.Cmd = in.args
		}
	}
	slices.Sort(c.Ports)
	return c
}

// checkEngineFreeImage runs make image's command (cmd/image) on the
// Dockerfile build stage's binary, reads the image back from its tarball
// as crane push or docker load would, and checks that it runs as the
// Dockerfile's image does (USER, EXPOSE, ENTRYPOINT, CMD) and that its
// /almoner runs with nothing of the host: chrooted into the image's
// files, as its user.
func checkEngineFreeImage(t *testing.T, final stage, bin string) {
	// A process of its own, as make image runs it, and not instrumented
	// by go test -race: compressing 40 MB is 1 s, not 15.
	const ref = "ghcr.io/almoner/almoner:test"
	path := filepath.Join(t.TempDir(), "almoner-image-test.tar")
	cmd := exec.CommandContext(t.Context(), "go", "run", "./cmd/image", "-binary", bin, "-ref", ref, "-out", path,
		"-ca-certs", imagetest.CABundle(t), "-created", "1764547200", "-revision", "test")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	report, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./cmd/image: %v\n%s", err, stderr.String())
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := loaded.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"digest    " + digest.String(), "kustomize edit set image almoner=" + ref + "\n"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("make image's report lacks %q:\n%s", want, report)
		}
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	got := runtimeContract{User: cf.Config.User, Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}
	for p := range cf.Config.ExposedPorts {
		got.Ports = append(got.Ports, p)
	}
	slices.Sort(got.Ports)
	if want := contractOf(final); !reflect.DeepEqual(got, want) {
		t.Errorf("make image's image runs as\n%+v\nthe Dockerfile's as\n%+v", got, want)
	}
	if size, err := os.Stat(path); err == nil {
		t.Logf("image tarball: %.1f MB", float64(size.Size())/1e6)
	}

	root := t.TempDir()
	imagetest.Unpack(t, loaded, root)
	out, err := imagetest.Run(t.Context(), cf.Config, root, "/almoner", "help")
	if err != nil || !strings.Contains(out, "usage: almoner") {
		t.Errorf("/almoner help in the image: %v\n%s", err, out)
	}

	// The image has no /usr/share/zoneinfo: tenants' time zones resolve
	// from the data the binary embeds, which time/tzdata linked in gives.
	list := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	list.Dir = filepath.Join("..", image.MainDir)
	list.Env = append(os.Environ(), image.GoBuildEnv...)
	deps, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if !slices.Contains(strings.Fields(string(deps)), "time/tzdata") {
		t.Errorf("%s does not link time/tzdata: the image has no zoneinfo for LoadLocation; import _ \"time/tzdata\" (or build with -tags timetzdata)", image.MainDir)
	}
}

// TestImageBuildCommand: make image builds /almoner with the command of
// the Dockerfile's build stage, so the two images run the same binary.
func TestImageBuildCommand(t *testing.T) {
	text, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(t, string(text))
	_, run := checkImage(stages)
	var from string // where the runtime stage copies the binary from
	for _, in := range stages[len(stages)-1].body {
		if in.cmd == "copy" && len(in.args) == 2 && in.args[1] == "/almoner" {
			from = in.args[0]
		}
	}
	want := append(append([]string{"cd", image.MainDir, "&&"}, image.GoBuildEnv...), "go")
	want = append(want, image.GoBuildArgs(from)...)
	if got := shellWords(run); !slices.Equal(got, want) {
		t.Errorf("the Dockerfile builds with\n%q\nmake image with\n%q", got, want)
	}
}

// shellWords splits a command as sh would, for the quoting a build
// command uses: words separated by spaces, double quotes removed.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
