# tidal's image: the production binary only (cmd/tidal, no embedded control
# plane), built static without cgo and stripped, on distroless static as the
# nonroot user (uid 65532, as the manifests in deploy/ expect).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/tidal ./cmd/tidal

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tidal /tidal
USER 65532:65532
ENTRYPOINT ["/tidal"]
