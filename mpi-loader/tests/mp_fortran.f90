! Test of the drx_mp module (bats-tests/mp.bats): every rank writes its zone
! of a 7x9x5 f64 array in Fortran order, element (i, j, k) holding
! i + 10 j + 100 k, reads it back in both orders and checks it; sets two
! attributes (units = 'degC', valid_range = -2, 40 as f64) and reads one back;
! its dimensions are named z, y, x; opens it again read-only and reads its
! zone in rounds of one chunk.  Every call of the module is used; a create
! whose chunk has fewer values than the shape fails.
!   mpiexec -n P mp_fortran ARRAY
program mp_fortran
  use mpi
  use drx_mp
  implicit none
  type(c_ptr) :: a
  integer :: ierr, me, rc, i, j, k
  integer(c_int64_t) :: lo(3), hi(3), n(3)
  real(c_double), allocatable :: z(:, :, :), back(:, :, :), c(:)
  character(len=256) :: path
  character(len=8) :: text

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call get_command_argument(1, path)
  ! a chunk of another length than the shape: -EINVAL on every rank and
  ! nothing made (the create below would find it); it was read past its end
  rc = drx_mp_create(MPI_COMM_WORLD, path, 'f64', [4_c_int64_t, 5_c_int64_t, 6_c_int64_t], &
                     [2_c_int64_t, 2_c_int64_t], a)
  if (rc /= -22) call check(-5, 'create with a chunk shorter than the shape did not fail')
  rc = drx_mp_create(MPI_COMM_WORLD, path, 'f64', [7_c_int64_t, 9_c_int64_t, 5_c_int64_t], &
                     [2_c_int64_t, 4_c_int64_t, 3_c_int64_t], a, dims='z,y,x')
  call check(rc, 'create')
  rc = drx_mp_attr_set(a, 'units', '', 'degC')
  call check(rc, 'attr_set')
  rc = drx_mp_attr_set(a, 'valid_range', 'f64', '-2,40')
  call check(rc, 'attr_set f64')
  rc = drx_mp_attr_get(a, 'units', text)
  if (rc /= 4 .or. text /= 'degC') call check(-5, 'attr_get units: ' // text)
  rc = drx_mp_attr_get(a, 'nothing', text)
  if (rc /= -2) call check(-5, 'attr_get of no attribute did not fail with -ENOENT')
  rc = drx_mp_attr_set(a, 'history', '', 'made by mp_fortran')
  call check(rc, 'attr_set history')
  rc = drx_mp_attr_rm(a, 'history')
  call check(rc, 'attr_rm')
  rc = drx_mp_attr_get(a, 'history', text)
  if (rc /= -2) call check(-5, 'attr_get of a removed attribute did not fail with -ENOENT')
  if (drx_mp_rank(a) /= 3) call check(-5, 'rank')
  if (drx_mp_elem_size(a) /= 8_c_size_t) call check(-5, 'elem_size')
  rc = drx_mp_zone(a, int(me, c_int), lo, hi)
  n = hi - lo
  allocate(z(n(1), n(2), n(3)), back(n(1), n(2), n(3)), c(product(n)))
  do k = 1, int(n(3))
    do j = 1, int(n(2))
      do i = 1, int(n(1))
        z(i, j, k) = real(lo(1) + i - 1 + 10 * (lo(2) + j - 1) + 100 * (lo(3) + k - 1), c_double)
      end do
    end do
  end do
  rc = drx_mp_write_all(a, lo, hi, 'F', z)
  call check(rc, 'write_all')
  rc = drx_mp_read_all(a, lo, hi, 'F', back)
  call check(rc, 'read_all F')
  if (any(back /= z)) call check(-5, 'read back in F order differs')
  ! C order: the last index fastest
  rc = drx_mp_read_all(a, lo, hi, 'C', c)
  call check(rc, 'read_all C')
  if (any(c /= [(((z(i, j, k), k = 1, int(n(3))), j = 1, int(n(2))), i = 1, int(n(1)))])) &
    call check(-5, 'read back in C order differs')
  ! an extension is seen by every rank
  rc = drx_mp_extend(a, 2_c_int, 1_c_int64_t)
  call check(rc, 'extend')
  rc = drx_mp_bounds(a, n)
  if (any(n /= [7, 9, 6])) call check(-5, 'bounds after extend')
  ! batched: the growth is the ranks' at once, recorded at the sync
  rc = drx_mp_set_sync(a, DRX_MP_SYNC_BATCH)
  call check(rc, 'set_sync')
  rc = drx_mp_extend(a, 2_c_int, 1_c_int64_t)
  call check(rc, 'extend in batch mode')
  rc = drx_mp_sync(a)
  call check(rc, 'sync')
  rc = drx_mp_bounds(a, n)
  if (any(n /= [7, 9, 7])) call check(-5, 'bounds after the batched extend')
  ! page-cache mode: the same growth, recorded without syncing the data
  rc = drx_mp_set_sync(a, DRX_MP_SYNC_NONE)
  call check(rc, 'set_sync none')
  rc = drx_mp_extend(a, 2_c_int, 1_c_int64_t)
  call check(rc, 'extend in page-cache mode')
  rc = drx_mp_sync(a)
  call check(rc, 'sync in page-cache mode')
  rc = drx_mp_bounds(a, n)
  if (any(n /= [7, 9, 8])) call check(-5, 'bounds after the page-cache extend')
  ! and a bad box fails on every rank
  rc = drx_mp_read_all(a, [0_c_int64_t, 0_c_int64_t, 0_c_int64_t], &
                       [8_c_int64_t, 1_c_int64_t, 1_c_int64_t], 'F', back)
  if (rc /= -22) call check(-5, 'a bad box did not fail with -EINVAL')
  if (index(drx_mp_error(), 'outside the bounds') == 0) call check(-5, 'bad box: ' // drx_mp_error())
  rc = drx_mp_close(a)
  call check(rc, 'close')
  ! read-only again, in rounds of one chunk (a buffer smaller than one)
  rc = drx_mp_open(MPI_COMM_WORLD, path, 0, a)
  call check(rc, 'open')
  rc = drx_mp_set_buffer(a, 64_c_size_t)
  call check(rc, 'set_buffer')
  back = 0
  rc = drx_mp_read_all(a, lo, hi, 'F', back)
  call check(rc, 'read_all after open')
  if (any(back /= z)) call check(-5, 'read back after open differs')
  rc = drx_mp_write_all(a, lo, hi, 'F', z)
  if (rc /= -9) call check(-5, 'write_all of a read-only handle did not fail with -EBADF')
  rc = drx_mp_close(a)
  call check(rc, 'close after open')
  deallocate(z, back, c)
  call MPI_Finalize(ierr)

contains
  subroutine check(rc, what)
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: what
    integer :: ierr2
    if (rc /= 0) then
      print '(a, i0, a, a, a, i0, a, a)', 'rank ', me, ': ', what, ': ', rc, ': ', drx_mp_error()
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr2)
    end if
  end subroutine
end program mp_fortran
