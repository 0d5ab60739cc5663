# strata_target_defaults(<target>): warnings and include layout shared by every strata target.
function(strata_target_defaults target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic;-Wshadow;-Wnon-virtual-dtor>")
  target_compile_features(${target} PUBLIC cxx_std_20)
  # The libraries are linked into the Python module (python/), a shared object, so they are built
  # position-independent; executables keep their own default.
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
endfunction()
