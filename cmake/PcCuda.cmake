# Decides whether the CUDA backend is built, before project().
#
#   PC_ENABLE_CUDA=OFF   never
#   PC_ENABLE_CUDA=ON    always; configuring fails without a CUDA toolkit
#   PC_ENABLE_CUDA=AUTO  when a CUDA 13 toolkit is found (default /usr/local/cuda)
#
# A GPU is not needed to build: the CUDA code compiles and links anywhere the
# toolkit is installed, and its tests skip when no device is present.
macro(pc_decide_cuda)
  string(TOUPPER "${PC_ENABLE_CUDA}" _pc_cuda_mode)
  if(NOT _pc_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "PC_ENABLE_CUDA must be AUTO, ON or OFF, not '${PC_ENABLE_CUDA}'")
  endif()
  set(PC_CUDA_LANGUAGE "")
  set(PC_HAVE_CUDA OFF)
  if(NOT _pc_cuda_mode STREQUAL "OFF")
    if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        # Ampere and Hopper; PTX for newer parts is JIT-compiled from sm_90.
        set(CMAKE_CUDA_ARCHITECTURES 80 90)
      endif()
      set(PC_CUDA_LANGUAGE CUDA)
      set(PC_HAVE_CUDA ON)
    elseif(_pc_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "PC_ENABLE_CUDA=ON but no CUDA compiler was found")
    endif()
  endif()
  message(STATUS "pc: CUDA backend ${PC_HAVE_CUDA} (PC_ENABLE_CUDA=${_pc_cuda_mode})")
endmacro()
