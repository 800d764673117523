package console

import (
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
)

// StaticFiles serves the files of fsys for GET and HEAD (with ranges and
// conditional requests); a directory or a missing file is 404, never a
// listing.
func StaticFiles(fsys fs.FS) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("*")
		if !fs.ValidPath(name) || name == "." {
			return echo.ErrNotFound
		}
		if fi, err := fs.Stat(fsys, name); err != nil || fi.IsDir() {
			return echo.ErrNotFound
		}
		http.ServeFileFS(c.Response(), c.Request(), fsys, name)
		return nil
	}
}

// CacheStatic lets browsers keep the static files for an hour; they change
// only with a new binary.
func CacheStatic(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
		return next(c)
	}
}
