// {fmt}'s compiled part, built into `distrun` itself rather than loaded from
// libfmt.so: with libstdc++ and libgcc linked statically too, `distrun`
// loads no C++ shared library at start, which took 1.2 of the 6 ms that
// `distrun run` needed to start two workers (bench/launch.sh; CMakeLists.txt
// beside this file says when it is built). format-inl.h is {fmt}'s own
// definition of the functions its headers declare; the templates below are
// the ones the distrun libraries call.
#include <fmt/format-inl.h>

namespace fmt::detail {

template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;

}  // namespace fmt::detail
