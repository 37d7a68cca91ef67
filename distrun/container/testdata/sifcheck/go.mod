// The reference SIF reader (github.com/sylabs/sif/v2, Debian's
// golang-github-sylabs-sif-dev) built offline from Debian's Go sources:
// container_image_test builds this in its build folder with
// GOFLAGS=-mod=mod GOPROXY=off.
module distrun.test/sifcheck

go 1.19

require (
	github.com/google/uuid v1.3.0
	github.com/sylabs/sif/v2 v2.8.3
)

replace (
	github.com/google/uuid => /usr/share/gocode/src/github.com/google/uuid
	github.com/sylabs/sif/v2 => /usr/share/gocode/src/github.com/sylabs/sif
)
