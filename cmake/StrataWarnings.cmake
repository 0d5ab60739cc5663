# strata_target_defaults(<target>): warnings and include layout shared by every strata target.
function(strata_target_defaults target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic;-Wshadow;-Wnon-virtual-dtor>")
  target_compile_features(${target} PUBLIC cxx_std_20)
endfunction()
