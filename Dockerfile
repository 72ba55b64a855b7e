# tidal's image: built with the Go toolchain, run from a distroless base with
# glibc (the binary uses cgo's resolver) as the nonroot user (uid 65532, as
# the manifests in deploy/ expect).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /src/bin/tidal /tidal
USER 65532:65532
ENTRYPOINT ["/tidal"]
