/*---------------------------------------------------------------------------*\
  =========                 |
  \\      /  F ield         | OpenFOAM: The Open Source CFD Toolbox
   \\    /   O peration     |
    \\  /    A nd           | TopoFOAM bench
     \\/     M anipulation  |
-------------------------------------------------------------------------------
License
    This file is part of TopoFOAM bench, distributed under the GNU General
    Public License version 3 or later, like OpenFOAM.

Application
    reduceTest

Description
    Reduces known values of every kind OpenFOAM reduces (scalar, label,
    vector, bool, two-scalar sums, gatherList/scatterList) and prints the
    results on the master, one "name value" line each, at full precision,
    so that runs with the stock and the scheduled tree can be compared.
    With -repeat N it also times N scalar sums and N label maxima and
    prints the mean latency in microseconds.

\*---------------------------------------------------------------------------*/

#include "argList.H"
#include "Pstream.H"
#include "PstreamReduceOps.H"
#include "vector.H"
#include "Vector2D.H"
#include "clockTime.H"
#include "IOmanip.H"

using namespace Foam;

// * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * * //

int main(int argc, char *argv[])
{
#if OPENFOAM
    // ESI (OPENFOAM=1912): the Foundation's OpenFOAM-12 has neither
    argList::noBanner();
    argList::noCheckProcessorDirectories();
#endif
    argList::addOption("repeat", "N", "Time N reductions of each kind");
    argList args(argc, argv);

    const label me = Pstream::myProcNo();
    const scalar x = 1.0/(me + 3.0);

    Info<< setprecision(17);
    Info<< "nProcs " << Pstream::nProcs() << nl;

    Info<< "scalarSum " << returnReduce(x, sumOp<scalar>()) << nl;
    Info<< "scalarMin " << returnReduce(x, minOp<scalar>()) << nl;
    Info<< "scalarMax " << returnReduce(x, maxOp<scalar>()) << nl;

    Vector2D<scalar> pair(x, 2*x);
    reduce(pair, sumOp<Vector2D<scalar>>());
    Info<< "pairSum " << pair.x() << ' ' << pair.y() << nl;

    const label n = 7*me + 3;
    Info<< "labelSum " << returnReduce(n, sumOp<label>()) << nl;
    Info<< "labelMin " << returnReduce(n, minOp<label>()) << nl;
    Info<< "labelMax " << returnReduce(n, maxOp<label>()) << nl;

    const vector v(x, -x, scalar(me));
    const vector vs = returnReduce(v, sumOp<vector>());
    const vector vmin = returnReduce(v, minOp<vector>());
    const vector vmax = returnReduce(v, maxOp<vector>());
    Info<< "vectorSum " << vs.x() << ' ' << vs.y() << ' ' << vs.z() << nl;
    Info<< "vectorMin " << vmin.x() << ' ' << vmin.y() << ' ' << vmin.z() << nl;
    Info<< "vectorMax " << vmax.x() << ' ' << vmax.y() << ' ' << vmax.z() << nl;

    Info<< "boolOr " << returnReduce(me == 1, orOp<bool>()) << nl;
    Info<< "boolAnd " << returnReduce(me >= 0, andOp<bool>()) << nl;

    labelList squares(Pstream::nProcs(), Zero);
    squares[me] = me*me;
    Pstream::gatherList(squares);
    Pstream::scatterList(squares);
    bool listOk = true;
    forAll(squares, proci)
    {
        listOk = listOk && squares[proci] == proci*proci;
    }
    Info<< "gatherScatterList " << returnReduce(listOk, andOp<bool>()) << nl;

#if OPENFOAM
    const label repeat = args.lookupOrDefault<label>("repeat", 0);
#else
    const label repeat = args.optionLookupOrDefault<label>("repeat", 0);
#endif
    if (repeat > 0)
    {
        // v1912 has no barrier: a reduce-and-broadcast synchronises all ranks
        scalar sink = 0;
        returnReduce(label(0), sumOp<label>());
        clockTime timer;
        for (label i = 0; i < repeat; ++i)
        {
            sink += returnReduce(x, sumOp<scalar>());
        }
        const scalar sumTime = timer.timeIncrement();
        label lsink = 0;
        returnReduce(label(0), sumOp<label>());
        timer.timeIncrement();
        for (label i = 0; i < repeat; ++i)
        {
            lsink += returnReduce(n, maxOp<label>());
        }
        const scalar maxTime = timer.timeIncrement();
        Info<< "latencyScalarSumUs " << 1e6*sumTime/repeat << nl
            << "latencyLabelMaxUs " << 1e6*maxTime/repeat << nl
            << "checksum " << sink << ' ' << lsink << nl;
    }

    Info<< "End" << endl;

    return 0;
}


// ************************************************************************* //
