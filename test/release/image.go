package release

import (
	"archive/tar"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// What an image index and an image manifest say, as far as these tests read them.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"` // an index
	Layers    []descriptor `json:"layers"`    // an image
}

// registryGet reads /v2/REPOSITORY/KIND/REFERENCE from a registry on loopback (plain HTTP).
func registryGet(repository, kind, reference string) (*http.Response, error) {
	host, name, _ := strings.Cut(repository, "/")
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/v2/"+name+"/"+kind+"/"+reference, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, "+
		"application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	return resp, nil
}

func readManifest(repository, reference string) (manifest, error) {
	var m manifest
	resp, err := registryGet(repository, "manifests", reference)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

// platforms lists the os/architecture of each image in an index, sorted.
func platforms(index manifest) []string {
	var out []string
	for _, d := range index.Manifests {
		if d.Platform != nil {
			out = append(out, d.Platform.OS+"/"+d.Platform.Architecture)
		}
	}
	slices.Sort(out)
	return out
}

// imageOf is the digest of the index's image for one platform.
func imageOf(index manifest, platform string) (string, error) {
	for _, d := range index.Manifests {
		if d.Platform != nil && d.Platform.OS+"/"+d.Platform.Architecture == platform {
			return d.Digest, nil
		}
	}
	return "", fmt.Errorf("the index has no %s image", platform)
}

// unpackImage extracts an image's layers (gzip tar) from the registry into dir:
// regular files, directories and links, nothing else.
func unpackImage(repository, digest, dir string) error {
	m, err := readManifest(repository, digest)
	if err != nil {
		return err
	}
	for _, layer := range m.Layers {
		if err := unpackLayer(repository, layer.Digest, dir); err != nil {
			return fmt.Errorf("layer %s: %w", layer.Digest, err)
		}
	}
	return nil
}

func unpackLayer(repository, digest, dir string) error {
	resp, err := registryGet(repository, "blobs", digest)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	z, err := gzip.NewReader(resp.Body)
	if err != nil {
		return err
	}
	r := tar.NewReader(z)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Name)))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeReg:
			err = writeFile(name, r)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, name)
		case tar.TypeLink:
			err = os.Link(filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Linkname))), name)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(name string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// inImage resolves a path inside an unpacked image, following its links
// (relative or absolute) within the image; "" if nothing is there.
func inImage(root, p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	cur := ""
	for hops := 0; len(parts) > 0; {
		next := parts[0]
		parts = parts[1:]
		if next == "" || next == "." {
			continue
		}
		cur = path.Join("/", cur, next)
		fi, err := os.Lstat(filepath.Join(root, cur))
		if err != nil {
			return ""
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		if hops++; hops > 40 {
			return ""
		}
		target, err := os.Readlink(filepath.Join(root, cur))
		if err != nil {
			return ""
		}
		if !strings.HasPrefix(target, "/") {
			target = path.Join(path.Dir(cur), target)
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
		cur = ""
	}
	return cur
}

// libraryDirs are where the AArch64 glibc's loader looks for libraries (Debian's multiarch layout).
var libraryDirs = []string{"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib"}

// checkAArch64 checks what running a program of an arm64 image would load,
// without running it: the program and every library it needs (DT_NEEDED,
// and theirs) are AArch64 ELF files, and its interpreter and each of those
// libraries are in the image. It returns the libraries it found.
func checkAArch64(root, program string) ([]string, error) {
	var found []string
	seen := map[string]bool{}
	todo := []string{program}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		f, err := elf.Open(filepath.Join(root, p))
		if err != nil {
			return found, fmt.Errorf("%s: %w", p, err)
		}
		machine, needed, interp, runpath, err := elfFacts(f)
		f.Close()
		if err != nil {
			return found, fmt.Errorf("%s: %w", p, err)
		}
		if machine != elf.EM_AARCH64 {
			return found, fmt.Errorf("%s is a %s ELF file, not an AArch64 one", p, machine)
		}
		if interp != "" && inImage(root, interp) == "" {
			return found, fmt.Errorf("%s: its interpreter %s is not in the image", p, interp)
		}
		for _, lib := range needed {
			resolved := ""
			for _, d := range append(runpath, libraryDirs...) {
				if resolved = inImage(root, strings.ReplaceAll(d, "$ORIGIN", path.Dir(p))+"/"+lib); resolved != "" {
					break
				}
			}
			if resolved == "" {
				return found, fmt.Errorf("%s needs %s, which is not in the image", p, lib)
			}
			if !seen[resolved] {
				found = append(found, resolved)
				todo = append(todo, resolved)
			}
		}
	}
	return found, nil
}

func elfFacts(f *elf.File) (machine elf.Machine, needed []string, interp string, runpath []string, err error) {
	needed, err = f.ImportedLibraries()
	if err != nil {
		return
	}
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		values, _ := f.DynString(tag)
		for _, v := range values {
			runpath = append(runpath, strings.Split(v, ":")...)
		}
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b, rerr := io.ReadAll(prog.Open())
			if rerr != nil {
				return machine, needed, interp, runpath, rerr
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	return f.Machine, needed, interp, runpath, nil
}
