#pragma once

// The picture of a trace: one lane per (process, thread), each span a box
// coloured by its category, nested spans in rows below their parent, the
// names of the spans wide enough to hold them (docs/observability.md,
// "Reading a merged trace"). Pure functions of their inputs.
#include <string>

#include "distrun/plot/image_output.h"
#include "distrun/plot/trace_timeline.h"

namespace distrun::plot {

// The size a timeline of `lanes` lanes is drawn at unless --size says
// otherwise: 1600 pixels wide, a fixed height per lane.
ImageSize timelineSize(size_t lanes);

// The colour of a category: compute, comm, data, launcher, optimizer,
// snapshot and wait have their own; any other takes the next free one of
// a fixed list, in the order of `categories` (sorted, distinct).
std::string categoryColour(const std::string& category, const std::vector<std::string>& categories);

// The gnuplot script drawing `timeline` between fromMs and toMs (its spans
// already within: window()). Sets no output: the image comes on gnuplot's
// standard output.
std::string timelineFigureScript(const Timeline& timeline, double fromMs, double toMs,
                                 ImageFormat format, ImageSize size);

}  // namespace distrun::plot
