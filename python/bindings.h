// The Python module's C++ side (_strata), split by area: bindings.cc (errors, systems, collectives,
// synthesis, experiments) and bindings_models.cc (models, graph optimization, parallel strategies). Every
// function calls the library function the matching `strata` command calls (experiments/*_report.h,
// experiments/collective_sweep.h, experiments/experiment.h) and returns plain Python values.
#pragma once

#include <pybind11/pybind11.h>
#include <nlohmann/json.hpp>

namespace strata::python {

// Runs `f` (strata's C++ work, which touches no Python object) with the GIL released, so Python threads run
// meanwhile: several simulations from a thread pool run in parallel. Exceptions pass through.
template <class F>
auto without_gil(F&& f) {
  pybind11::gil_scoped_release release;
  return f();
}

// A JSON value as Python objects: dict, list, str, int, float, bool, None.
pybind11::object to_python(const nlohmann::json& j);

void add_model_bindings(pybind11::module_& m);

}  // namespace strata::python
